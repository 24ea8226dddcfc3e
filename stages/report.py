"""Stage report: report/index.html, the answer on one page, one section per seed experiment (opens offline)."""

from parabench.cli import stage_main
from parabench.config import load_params
from parabench.paths import REPORT_FILE
from parabench.report.page import write_page


def main() -> None:
    params = load_params()
    write_page(REPORT_FILE, list(params.inputs), list(params.sweeps))
    print(f"The report: {REPORT_FILE.resolve().as_uri()}")


if __name__ == "__main__":
    stage_main(main)
