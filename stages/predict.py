"""Stage predict@<workload>: what more devices would buy, predicted from one-device measurements and the probe's
links (within this node, and between the nodes), checked against every multi-process cell of the benchmark and the
train run where it spanned several nodes."""

import argparse

from parabench.cli import stage_main
from parabench.config import load_params
from parabench.io import read_json, read_model, write_json
from parabench.paths import PROBE_FILE, PROBE_NETWORK_FILE, prediction_metrics_file, results_file
from parabench.prediction.predict import compact, predict
from parabench.records import BenchmarkResults, RunRecord, probe_record
from parabench.workloads import WORKLOADS


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("workload", choices=sorted(WORKLOADS))
    args = parser.parse_args()
    params = load_params()
    options = params.predict
    probe, network = (probe_record(read_json(path)) for path in (PROBE_FILE, PROBE_NETWORK_FILE))
    benchmark = read_model(results_file("benchmark", args.workload), BenchmarkResults)
    train = read_model(results_file("train", args.workload), RunRecord)
    prediction = predict(benchmark, options, params.settings(args.workload).scaling, probe, network, train)
    write_json(results_file("prediction", args.workload), prediction.model_dump(mode="json"))
    write_json(prediction_metrics_file(args.workload), compact(prediction, options))


if __name__ == "__main__":
    stage_main(main)
