"""What every stage process pays before it works: the params schema, which each one loads, imports no torchvision,
and no process imports torch's compiler unless the run compiles."""

import subprocess
import sys


def test_the_params_schema_leaves_torchvision_to_the_code_that_builds_a_model_or_a_view():
    """torchvision's import costs every process about 1.2 s (it imports torch._dynamo): a stage that builds no model
    (check's file rules, download, prepare, speedup, the launchers of train, benchmark and sweep) never pays it."""
    probe = "import sys, parabench.config, parabench.engine.plan; print('torchvision' in sys.modules)"
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "False"


def test_no_process_imports_torch_s_compiler_unless_the_run_compiles():
    """torch._dynamo (with inductor) costs a process 1 to 3 s at import: the training loop, the workers and the cell
    workers import it only in compile_blocks, for compile: true."""
    probe = (
        "import sys, parabench.engine.training, parabench.engine.worker, parabench.engine.cell_worker; "
        "print(sorted(name for name in ('torch._dynamo', 'torch._inductor') if name in sys.modules))"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"
