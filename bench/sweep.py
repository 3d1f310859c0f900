"""Benchmark: hyper-parameter sweeps with early stopping (issue 40), on one real Airflow.

    uv run python -m bench.sweep [--trials 32] [--concurrency 2] [--page-trials 200]

One embedded Airflow (api-server, scheduler with the LocalExecutor, dag-processor; SQLite; local
launcher) runs two sweeps of the same task one after the other, created and started through
the plugin's REST API as the console does. The task's algorithm is a synthetic training
(``TRAINING``, a ``python -c`` program) whose loss curve is a known function of its parameters:

    loss(step) = floor + (2.5 - floor) * exp(-rate * step), times (1 + 1 % seeded noise)

``floor`` grows with the distance of (log10 lr, log2 width, optimizer) from (-2, 7, adam), so most
of the space is hopeless and a narrow region good; ``rate`` grows with lr, so a high lr looks
good early and ends on a high floor (what early stopping can get wrong). The noise is seeded by
the sweep's fixed ``seed`` and the trial's parameters: a trial with the same parameters prints
the same curve in both sweeps. A step is printed (``step=N loss=X t=<unix time>``) every
``STEP_SECONDS``, 40 steps; the algorithm's metric definition makes the ``loss`` chart of it,
and the training writes a model file.

Both sweeps use Optuna's random sampler with the same seed: it draws each trial's parameters
from its own generator, in the order the trials are asked, whatever the earlier trials did, so
trial n has the same parameters in both (checked and printed). TPE would not do: it proposes
from the values (and pruned curves) seen so far, which pruning changes.

- (a) pruner ``none`` against (b) ``median`` (from step ``MIN_STEPS``, after 4 finished
  trials): node-hours of each (the sweep's ``node_hours``: its trials' node holds, as usage
  accounting bills them) and their ratio (goal ≤ 0.6), the best objective of each and their
  difference (goal ≤ 2 %), trials pruned, wall time (the sweep's start to its end);
- the platform's overhead per trial, p50/p95 over both sweeps: trigger (the trial's run recorded
  in the catalog, just before the driver asks Airflow) to its first step printed; for the pruned
  trials the decision (``at`` of the run's abort flag) after the last step it judged (that step's
  printed time; goal ≤ 2 s), and the decision to its node stopped (the node hold's end);
- the sweep page (``/octotrain/ui/sweeps/{id}``) of a sweep of ``--page-trials`` finished trials
  (written directly: runs, node holds and the study's trials with 40 reported values each, a
  quarter pruned earlier), in headless Debian chromium until the page says it is drawn
  (``data-ready``), first visit and again (goal < 1.5 s); the baseline: the two REST reads the
  page makes (the sweep, its curves), through the same api-server.

Nothing here asserts a time; a sweep that does not finish stops the benchmark with what it said.
The Airflow root (its components' logs, the catalog, the runs' files) is kept and printed.
"""

from __future__ import annotations

import argparse
import json
import math
import re
import statistics
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx

from octotrain.contracts import dag_id_for
from tests.factories import VALID_TASK
from tests.live_airflow import HTTP_SECONDS, LiveAirflow, demo_airflow

STEPS = 40
STEP_SECONDS = 0.25
MIN_STEPS = 10  # a quarter of the training
SEED = 40
# The training: parameters arrive as --name=value; prints a step at once, then one every
# STEP_SECONDS (no work before the first, so the first line is the training's start).
TRAINING = (
    "import math, os, random, sys, time\n"
    "p = dict(a[2:].split('=', 1) for a in sys.argv[1:] if a.startswith('--'))\n"
    "u, w = math.log10(float(p['lr'])), math.log2(int(p['width']))\n"
    "penalty = {'adam': 0.0, 'rmsprop': 0.4, 'sgd': 1.2}[p['optimizer']]\n"
    "d = ((u + 2.0) / 0.5) ** 2 + ((w - 7.0) / 1.5) ** 2 + penalty\n"
    "floor = 0.05 + 1.2 * (1 - math.exp(-d / 2))\n"
    "rate = min(0.15 * 10 ** (0.3 * (u + 2.0)), 0.5)\n"
    f"for step in range(1, {STEPS + 1}):\n"
    "    rng = random.Random(f\"{p['seed']}-{p['lr']}-{p['width']}-{p['optimizer']}-{step}\")\n"
    "    loss = (floor + (2.5 - floor) * math.exp(-rate * step)) * (1 + 0.01 * rng.gauss(0, 1))\n"
    "    print(f'step={step} loss={loss:.6f} t={time.time():.3f}', flush=True)\n"
    f"    if step < {STEPS}:\n"
    f"        time.sleep({STEP_SECONDS})\n"
    "with open(os.path.join(os.environ['OUTPUT'], 'model.txt'), 'w') as model:\n"
    "    model.write(repr(sorted(p.items())))\n"
)
STEP_LINE = re.compile(r"step=(\d+) loss=\S+ t=([0-9.]+)")
ALGORITHM = {
    "name": "sweep-bench",
    "algorithm_type": "custom_script",
    "image": "python:3.11-slim",
    "command": ["python", "-c", TRAINING],
    "sample_type": "table",
    "parameters": [
        {"name": "lr", "type": "float", "default": 0.1, "min": 1e-5, "max": 10.0},
        {"name": "width", "type": "int", "default": 64, "min": 1, "max": 4096},
        {"name": "optimizer", "type": "enum", "default": "sgd",
         "choices": ["sgd", "adam", "rmsprop"]},
        {"name": "seed", "type": "int", "default": 0, "min": 0, "max": 1_000_000},
    ],
    "metric_definitions": [
        {"name": "loss", "regex": "step=(?P<step>\\d+) loss=(?P<loss>[0-9.e+-]+)"}
    ],
}  # fmt: skip


def sweep_document(name: str, pruner: str, trials: int, concurrency: int) -> dict[str, Any]:
    return {
        "name": name,
        "parameters": {
            "lr": {"type": "float", "low": 1e-4, "high": 1.0, "log": True},
            "width": {"type": "int", "low": 16, "high": 512, "log": True},
            "optimizer": {"type": "choice", "choices": ["sgd", "adam", "rmsprop"]},
            "seed": {"type": "fixed", "value": 3},
        },
        "objective": {"chart": "loss", "series": "loss", "direction": "minimize"},
        "search": {"sampler": "random", "seed": SEED},
        "budget": {"trials": trials},
        "concurrency": concurrency,
        "early_stopping": {"pruner": pruner, "min_steps": MIN_STEPS, "startup_trials": 4},
    }


def moment(value: str | None) -> float:
    assert value is not None
    return datetime.fromisoformat(value).timestamp()


def run_sweep(api: httpx.Client, airflow: LiveAirflow, task_id: int, document: dict) -> dict:
    """Start the sweep through REST and wait for it to end; its view."""
    started = api.post(f"/tasks/{task_id}/sweeps", params={"start": "true"}, json=document)
    if started.status_code != 201:
        raise SystemExit(f"the sweep was refused: {started.text}")
    sweep_id = started.json()["id"]

    def ended() -> dict | None:
        sweep = api.get(f"/sweeps/{sweep_id}").json()
        return sweep if sweep["state"] not in ("created", "running", "stopping") else None

    sweep = airflow.wait_until(f"sweep {document['name']} to end", ended, timeout=3600)
    if sweep["state"] != "finished":
        raise SystemExit(f"sweep {document['name']} ended {sweep['state']}: {sweep['message']}")
    return dict(sweep)


def trial_facts(sweep: dict) -> list[dict[str, Any]]:
    """Per trial, from its run's train log, abort flag and node hold: when it was triggered,
    its printed steps' times, the pruning decision and when its node stopped."""
    from hooks.launchers import files_of
    from hooks.storage.catalog import default_catalog
    from octotrain.abort_flags import AbortFlag
    from octotrain.catalog.models import NodeHold, Run, as_utc
    from octotrain.contracts import NodeLogNames
    from octotrain.planning import recorded_plan
    from octotrain.run_layout import RunObjects

    facts = []
    with default_catalog().session() as session:
        for trial in sweep["trials"]:
            run = session.get(Run, trial["run_id"])
            assert run is not None
            plan = recorded_plan(run)
            files, nodes = files_of(run)
            fact: dict[str, Any] = {"number": trial["number"], "state": trial["state"],
                                    "triggered": as_utc(run.started_at).timestamp()}  # fmt: skip
            if plan is None or not nodes:
                facts.append(fact)
                continue
            objects = RunObjects(run.task_id, plan.run_key)
            log = files.read(objects.log(NodeLogNames(run.task_id, nodes[0]).train)) or b""
            steps = {int(m[1]): float(m[2]) for m in STEP_LINE.finditer(log.decode())}
            fact["steps"] = steps
            flag_text = files.read(objects.abort_flag)
            if flag_text:
                flag = AbortFlag.from_json(flag_text.decode())
                judged = re.search(r"at step (\d+)", flag.reason)
                fact["decided"] = moment(flag.at) if flag.at else None
                fact["judged_step"] = int(judged[1]) if judged else None
            holds = session.query(NodeHold).filter(NodeHold.run_id == run.id).all()
            ends = [as_utc(hold.ended_at).timestamp() for hold in holds if hold.ended_at]
            fact["stopped"] = max(ends) if ends and len(ends) == len(holds) else None
            facts.append(fact)
    return facts


def write_finished_sweep(api: httpx.Client, task_id: int, trials: int) -> int:
    """A sweep of ``trials`` finished trials, written as the driver would have left it: created
    through REST, then its runs (a quarter pruned), their node holds and the study's trials."""
    import optuna

    from hooks.storage.catalog import default_catalog
    from hooks.sweeps.sweep_study import distributions, open_study
    from octotrain.catalog.models import NodeHold, Run, RunState, Sweep, SweepState
    from octotrain.sweeps import end_sweep, sweep_spec

    document = sweep_document("page-200", "median", trials, 2)
    made = api.post(f"/tasks/{task_id}/sweeps", json=document)
    assert made.status_code == 201, made.text
    sweep_id = int(made.json()["id"])
    catalog = default_catalog()
    with catalog.session() as session:
        sweep = session.get(Sweep, sweep_id)
        assert sweep is not None
        spec = sweep_spec(sweep)
        study = open_study(sweep, spec, catalog.url)
    # The study first, with no catalog transaction open (SQLite: one writer at a time).
    spaces = distributions(spec)
    curves: list[list[float]] = []
    for number in range(trials):
        trial = study.ask(spaces)
        pruned = number >= 4 and number % 4 == 1
        floor = 0.05 + (number * 0.37) % 1.2
        reported = MIN_STEPS + number % 7 if pruned else STEPS
        curves.append([floor + (2.5 - floor) * math.exp(-0.15 * step)
                       for step in range(1, reported + 1)])  # fmt: skip
        for step, value in enumerate(curves[-1], start=1):
            trial.report(value, step)
        if pruned:
            study.tell(trial, state=optuna.trial.TrialState.PRUNED)
        else:
            study.tell(trial, curves[-1][-1])
    begin = datetime.now(UTC) - timedelta(hours=2)
    with catalog.session() as session:
        best: tuple[float, int] | None = None
        for number, values in enumerate(curves):
            pruned = len(values) < STEPS
            started = begin + timedelta(seconds=20 * number)
            ended = started + timedelta(seconds=2 + len(values) * STEP_SECONDS)
            message = f"Pruned by sweep page-200 (trial {number}, at step {len(values)})"
            run = Run(task_id=task_id, airflow_run_id=f"request__sweep-{sweep_id}-trial-{number}",
                      state=RunState.PRUNED if pruned else RunState.SUCCESS, node_count=1,
                      triggered_by="bench", trigger="manual", sweep_id=sweep_id,
                      trial_number=number, started_at=started, ended_at=ended,
                      message=message if pruned else "")  # fmt: skip
            session.add(run)
            session.flush()
            hold = NodeHold(run_id=run.id, node_index="single-0", ended_at=ended,
                            started_at=started + timedelta(seconds=1))  # fmt: skip
            session.add(hold)
            if not pruned and (best is None or values[-1] < best[0]):
                best = (values[-1], run.id)
        sweep = session.get(Sweep, sweep_id)
        assert sweep is not None
        sweep.state = SweepState.RUNNING
        sweep.started_at = begin
        sweep.airflow_run_id = f"request__bench-page-{sweep_id}"
        sweep.best_run_id = best[1] if best else None
        session.flush()
        end_sweep(session, sweep_id, SweepState.FINISHED, f"Finished: all {trials} trials were run")
        session.commit()
    return sweep_id


# The page's own signal (sweep.js sets data-ready once the sweep, its trials and charts are
# shown), or the text of a problem it shows.
DRAWN = """() => {
    const problem = document.querySelector('#notices .problem, #sweep-message.problem');
    if (problem && problem.innerText) return problem.innerText;
    const page = document.querySelector('#sweep-page');
    return page && page.dataset.ready === 'true' && 'drawn';
}"""


# Where a visit's time went, from the navigation's start: the page's HTML answered, its two
# REST reads answered (the later one), and now (drawn).
TIMELINE = """() => {
    const reads = performance.getEntriesByType('resource')
        .filter((entry) => entry.name.includes('/api/v1/sweeps/'));
    const html = performance.getEntriesByType('navigation')[0];
    return [html.responseEnd, Math.max(...reads.map((entry) => entry.responseEnd)),
            performance.now()].map((ms) => ms / 1000);
}"""
Visit = tuple[float, list[float]]


def page_seconds(airflow: LiveAirflow, sweep_id: int) -> list[Visit] | str:
    """The page drawn, first visit and again (seconds, and its timeline), or why it could not
    be measured."""
    from playwright.sync_api import sync_playwright

    from bench.charts import CHROMIUM, CHROMIUM_ARGS

    url = f"{airflow.url}/octotrain/ui/sweeps/{sweep_id}"
    headers = airflow.admin_headers()
    answer = httpx.get(url, headers=headers, timeout=HTTP_SECONDS)
    if answer.status_code != 200 or "data-sweep" not in answer.text:
        return f"no sweep page here (GET {url}: {answer.status_code})"
    token = headers["Authorization"].removeprefix("Bearer ")
    visits: list[Visit] = []
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        context = browser.new_context(viewport={"width": 1400, "height": 1000})
        context.add_cookies([{"name": "_token", "value": token, "url": airflow.url}])
        page = context.new_page()
        for _ in range(2):
            started = time.perf_counter()
            page.goto(url)
            shown = page.wait_for_function(DRAWN, timeout=60_000).json_value()
            seconds = time.perf_counter() - started
            if shown != "drawn":
                browser.close()
                return f"the page shows a problem: {shown}"
            visits.append((seconds, page.evaluate(TIMELINE)))
        browser.close()
    return visits


def percentiles(samples: list[float]) -> str:
    if not samples:
        return "—"
    ordered = sorted(samples)
    p95 = ordered[min(len(ordered) - 1, math.ceil(0.95 * len(ordered)) - 1)]
    return f"p50 {statistics.median(ordered):6.2f} s  p95 {p95:6.2f} s  (n={len(ordered)})"


def verdict(met: bool) -> str:
    return "met" if met else "NOT met"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=32)
    parser.add_argument("--concurrency", type=int, default=2)
    parser.add_argument("--page-trials", type=int, default=200)
    arguments = parser.parse_args()
    bench_started = time.monotonic()
    root = Path(tempfile.mkdtemp(prefix="octotrain-bench-sweep-"))
    # The trainings sleep: the local admission may count many cores (2 runs at once need 2).
    settings = {"OCTOTRAIN_STATE_DIR": str(root / "state"), "OCTOTRAIN_LOCAL_CORES": "64"}
    with demo_airflow(root, settings, components=("scheduler", "dag-processor")) as (airflow, _):
        api = httpx.Client(base_url=f"{airflow.url}/octotrain/api/v1",
                           headers=airflow.admin_headers(), timeout=HTTP_SECONDS)  # fmt: skip
        made = api.post("/projects/demo/algorithms", json=ALGORITHM)
        assert made.status_code == 201, made.text
        task = api.post("/tasks", json=VALID_TASK | {
            "name": "sweep-bench", "algorithm": "sweep-bench", "node_count": 1,
            "parameters": {"lr": 0.1, "width": 64, "optimizer": "sgd", "seed": 3}})  # fmt: skip
        assert task.status_code == 201, task.text
        task_id = task.json()["id"]
        airflow.wait_until("Airflow to parse the task's DAG", lambda: httpx.get(
            f"{airflow.url}/api/v2/dags/{dag_id_for(task_id)}", headers=api.headers,
            timeout=HTTP_SECONDS).status_code == 200)  # fmt: skip
        sweeps: dict[str, dict] = {}
        facts: dict[str, list[dict[str, Any]]] = {}
        for pruner in ("none", "median"):
            document = sweep_document(f"bench-{pruner}", pruner, arguments.trials,
                                      arguments.concurrency)  # fmt: skip
            sweeps[pruner] = run_sweep(api, airflow, task_id, document)
            facts[pruner] = trial_facts(sweeps[pruner])
        (root / "sweeps.json").write_text(json.dumps({"sweeps": sweeps, "facts": facts},
                                                     default=str, indent=1))  # fmt: skip
        page_id = write_finished_sweep(api, task_id, arguments.page_trials)
        reads: list[float] = []
        for _ in range(5):
            started = time.perf_counter()
            for path in (f"/sweeps/{page_id}", f"/sweeps/{page_id}/curves"):
                api.get(path).raise_for_status()
            reads.append(time.perf_counter() - started)
        try:
            page = page_seconds(airflow, page_id)
        except Exception as error:  # a page that never says it is drawn: say so, keep the rest
            page = f"{type(error).__name__}: {str(error).splitlines()[0]}"
    report(arguments, sweeps, facts, statistics.median(reads), page)
    print(f"  (the whole benchmark: {time.monotonic() - bench_started:.0f} s; "
          f"Airflow's root and logs: {root})")  # fmt: skip


def report(
    arguments: argparse.Namespace,
    sweeps: dict[str, dict],
    facts: dict[str, list[dict[str, Any]]],
    reads: float,
    page: list[Visit] | str,
) -> None:
    none, median = sweeps["none"], sweeps["median"]
    params = {p: {t["number"]: t["parameters"] for t in s["trials"]} for p, s in sweeps.items()}
    same = sum(params["none"].get(n) == v for n, v in params["median"].items())
    print(f"{arguments.trials} trials of a {STEPS}-step training ({STEP_SECONDS} s a step), "
          f"{arguments.concurrency} at once, random sampler (seed {SEED}); local launcher, "
          f"LocalExecutor; trial n has the same parameters in both sweeps: "
          f"{same}/{len(params['median'])}")  # fmt: skip
    print(f"  {'sweep':<34}{'node-hours':>11}{'best':>10}{'pruned':>8}{'wall':>9}")
    for label, sweep in (("(a) no pruning (baseline)", none),
                         (f"(b) median from step {MIN_STEPS}", median)):  # fmt: skip
        wall = moment(sweep["ended_at"]) - moment(sweep["started_at"])
        best = sweep["best"]["objective"] if sweep["best"] else float("nan")
        print(f"  {label:<34}{sweep['node_hours']:11.5f}{best:10.4f}"
              f"{sweep['counts'].get('pruned', 0):8d}{wall:8.0f}s   "
              f"{json.dumps(sweep['counts'])}")  # fmt: skip
    ratio = median["node_hours"] / none["node_hours"]
    print(
        f"  node-hours (b)/(a)               {ratio:6.2f}x     goal ≤ 0.6: {verdict(ratio <= 0.6)}"
    )
    if none["best"] and median["best"]:
        a, b = none["best"]["objective"], median["best"]["objective"]
        gap = (b - a) / abs(a)
        print(f"  best objective (b) vs (a)        {gap * 100:+6.2f} %   goal within 2 %: "
              f"{verdict(abs(gap) <= 0.02)}  (a: trial {none['best']['trial']}, "
              f"b: trial {median['best']['trial']})")  # fmt: skip
    every = facts["none"] + facts["median"]
    first = [f["steps"][1] - f["triggered"] for f in every if 1 in f.get("steps", {})]
    pruned = [f for f in facts["median"] if f["state"] == "pruned" and f.get("decided")]
    latency = [f["decided"] - f["steps"][f["judged_step"]] for f in pruned
               if f.get("judged_step") in f.get("steps", {})]  # fmt: skip
    stopped = [f["stopped"] - f["decided"] for f in pruned if f.get("stopped")]
    print("  overhead per trial")
    print(f"    trigger → first training step   {percentiles(first)}")
    print(
        f"    step judged → pruning decision  {percentiles(latency)}   goal ≤ 2 s: "
        f"{verdict(bool(latency) and max(latency) <= 2)} (max {max(latency, default=0):.2f} s)"
    )
    print(f"    pruning decision → node stopped {percentiles(stopped)}")
    print(f"  sweep page, {arguments.page_trials} finished trials")
    print(f"    its two REST reads (baseline)  {reads:6.3f} s")
    if isinstance(page, str):
        print(f"    page: not measured: {page}")
    else:
        labels = ("first visit", "again")
        for label, (seconds, (html, reads_done, drawn)) in zip(labels, page, strict=True):
            print(f"    page drawn, {label:<19}{seconds:6.3f} s  ratio {seconds / reads:5.2f}x   "
                  f"goal < 1.5 s: {verdict(seconds < 1.5)}; HTML at {html:.2f} s, its REST "
                  f"reads answered at {reads_done:.2f} s, drawn at {drawn:.2f} s")  # fmt: skip


if __name__ == "__main__":
    main()
