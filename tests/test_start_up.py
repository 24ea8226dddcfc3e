"""What every stage process pays before it works: the params schema, which each one loads, imports no torchvision."""

import subprocess
import sys


def test_the_params_schema_leaves_torchvision_to_the_code_that_builds_a_model_or_a_view():
    """torchvision's import costs every process about 1.2 s (it imports torch._dynamo): a stage that builds no model
    (check's file rules, download, prepare, speedup, the launchers of train, benchmark and sweep) never pays it."""
    probe = "import sys, parabench.config, parabench.engine.plan; print('torchvision' in sys.modules)"
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "False"
