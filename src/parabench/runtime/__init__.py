"""The bottom floor: processes, devices, collectives, hardware detection, the machine's environment, launch."""
