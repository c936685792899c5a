"""The GPU check: every GPU path on the tiny model, in one call, in under 8 minutes.

    python tests/gpu/check.py OUT [--wheels DIR | --no-wheels] [--budget S] [--baseline SUMMARY]
                                  [--only ITEM,...] [--on-cpu]

OUT (or $OUT): where summary.json and check.log go. Each item runs in its own process with its
own timeout and ends as one line: pass / fail / skipped, with its reason. Without CUDA every
CUDA item is skipped with its reason, so the same check runs on a CPU machine (and in CI).

Standard library and pip only: on a bare GPU machine it runs before anything is installed. The carried
wheels (tests/gpu/prepare_wheels.sh) and skillos itself go into a temporary target that every
item gets on PYTHONPATH; nothing is installed into the machine's own Python.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
BUDGET_S = 450  # 7.5 min of items: the whole call stays under 8 with setup and the summary
MIN_START_S = 20  # an item is not started with less budget left than this
BASELINE = HERE / "cpu-baseline.json"  # a run with --on-cpu: the CUDA items' CPU wall times
CUDA_ITEMS = ("tiny_full_bf16", "tiny_lora_bf16_gc", "grpo_train_cuda", "selector_train_cuda",
              "hf_games_cuda", "accelerate_launch", "canary_curator_quick", "canary_selector_quick",
              "smollm2_games_cuda", "smollm2_grpo_lora_cuda")
# The real small model (toolkit/models.py): its chat template, tool format and LoRA path on the GPU.
# It is fetched from the package index, which a bare GPU machine cannot reach, and its 94 MB file
# is over what the device tool carries (64 MiB); so these items run where it is fetched
# ($SKILLOS_CACHE/models) and are skipped, saying so, where it is not.
REAL_MODEL = "smollm2-135m-instruct"
REAL_MODEL_ITEMS = ("smollm2_games_cuda", "smollm2_grpo_lora_cuda")
CANARIES = ("canary_curator_quick", "canary_selector_quick")
ITEMS = ("facts", "wheels", "stack") + CUDA_ITEMS


class BadInput(Exception):
    """A one-line error for the person who ran the check: exit 2, no traceback."""


def last_json(text: str) -> dict | None:
    """A child's result: the JSON object that ends its stdout, on one line (steps.py) or indented
    over many (skillos --json), so from the last line that opens one at column 0 that parses."""
    lines = text.strip().splitlines()
    for i in reversed(range(len(lines))):
        if lines[i].startswith("{"):
            try:
                return json.loads("\n".join(lines[i:]))
            except ValueError:
                continue
    return None


class GpuPoll:
    """nvidia-smi's memory.used, polled while an item runs: the peak of processes the child starts
    (accelerate's workers) that its own allocator cannot see. Whole device, so it is a fallback."""

    def __init__(self):
        self.peak, self._stop = None, threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True) if shutil.which("nvidia-smi") else None

    def _run(self):
        while not self._stop.is_set():
            try:
                used = subprocess.run(["nvidia-smi", "--query-gpu=memory.used", "--format=csv,noheader,nounits"],
                                      capture_output=True, text=True, timeout=5).stdout.split()
                self.peak = max([self.peak or 0] + [int(x) for x in used if x.isdigit()])
            except (OSError, subprocess.SubprocessError):
                pass
            self._stop.wait(1.0)

    def __enter__(self):
        if self._thread:
            self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        if self._thread:
            self._thread.join(timeout=6)


class Check:
    def __init__(self, out: Path, wheels: Path | None, budget: float, baseline: dict, on_cpu: bool, only: set):
        self.out, self.wheels, self.budget, self.baseline = out, wheels, budget, baseline
        self.on_cpu, self.only = on_cpu, only
        self.work = Path(tempfile.mkdtemp(prefix="skillos-gpu-check-"))
        self.env = {**os.environ, "PYTHONUNBUFFERED": "1", "HF_HUB_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false",
                    "SKILLOS_HOME": str(self.work / "home")}  # the check's ledger is its own, thrown away
        self.started = time.perf_counter()
        self.items: list[dict] = []
        self.cuda: str | None = "not yet known"  # None once CUDA is seen; else why not
        self.log = (out / "check.log").open("w")

    def left(self) -> float:
        return self.budget - (time.perf_counter() - self.started)

    def record(self, name: str, status: str, reason: str, wall_s=None, peak=(None, "not run"), **extra):
        item = {"name": name, "status": status, "reason": reason, "wall_s": wall_s,
                "peak_gpu_mb": peak[0], "peak_gpu_reason": peak[1], **extra}
        self.items.append(item)
        self.write_summary()
        memory = "" if extra.get("predicted_gpu_mb") is None else \
            f" [GPU MB: predicted {extra['predicted_gpu_mb']}, peak {peak[0] if peak[0] is not None else 'unmeasured'}]"
        print(f"{status.upper():7} {name:24} {'' if wall_s is None else f'{wall_s:6.1f}s'}  {reason}{memory}", flush=True)
        return item

    def predicted(self, train: list | None) -> dict:
        """The memory plan's prediction for an item that trains `train` ([config, --set, k=v, ...]),
        beside its measured peak; unmeasured (None + why) for the others."""
        if not train:
            return {"predicted_gpu_mb": None, "predicted_reason": "the memory plan covers training launches only"}
        try:
            done = subprocess.run([sys.executable, str(HERE / "steps.py"), "memory", *train], cwd=ROOT, env=self.env,
                                  capture_output=True, text=True, timeout=60)
        except subprocess.TimeoutExpired:
            return {"predicted_gpu_mb": None, "predicted_reason": "the memory step timed out"}
        return last_json(done.stdout) or {"predicted_gpu_mb": None,
                                          "predicted_reason": f"memory step: {done.stderr.strip()[-200:]}"}

    def run(self, name: str, argv: list[str], timeout: float, judge=None, ok_codes=(0,), describe=None,
            train: list | None = None) -> dict:
        """Run one item's process (python children under peak.py) and record its one line.
        judge(result_json) returns a failure reason or None; describe(result_json) a pass's reason;
        `train` (the config it trains and its sets): the memory plan's prediction goes beside the peak."""
        if self.only and name not in self.only | {"facts"}:  # facts: whether there is CUDA
            return self.record(name, "skipped", "not in --only")
        if self.left() < MIN_START_S:
            return self.record(name, "skipped", "time budget")
        if name in CUDA_ITEMS and self.cuda and not self.on_cpu:
            return self.record(name, "skipped", f"no CUDA: {self.cuda}")
        if self.cuda:  # an --on-cpu rehearsal: the CPU is many times slower
            timeout = max(timeout, 900)
        own, timeout = timeout, min(timeout, self.left())
        peak_file = self.work / f"{name}.peak.json"
        if argv[0] == "PY":  # a Python child: its own allocator peak, via peak.py
            argv = [sys.executable, str(HERE / "peak.py"), str(peak_file)] + argv[1:]
        # stderr goes into check.log as it comes: a call cut off from outside still leaves it
        self.log.write(f"\n===== {name}: {' '.join(argv)}\n--- stderr\n")
        self.log.flush()
        start, t0 = self.log.tell(), time.perf_counter()
        with GpuPoll() as poll, open(self.work / f"{name}.stdout", "w+") as out:
            # its own process group: a timeout ends the grandchildren too (accelerate's workers,
            # which would otherwise hold the GPU)
            proc = subprocess.Popen(argv, cwd=ROOT, env=self.env, stdout=out, stderr=self.log, start_new_session=True)
            try:
                code = proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
                code = None
            out.seek(0)
            stdout = out.read()
        wall = round(time.perf_counter() - t0, 1)
        with open(self.out / "check.log") as log:
            log.seek(start)
            stderr = log.read()
        self.log.write(f"--- stdout\n{stdout}\n--- exit {code}, {wall}s\n")
        self.log.flush()
        result = last_json(stdout)
        peak = self.peak(peak_file, poll)
        predicted = self.predicted(train)
        if code is None and timeout < own:  # the budget cut it short: not finished, not failed
            return self.record(name, "skipped", f"time budget: stopped after {timeout:.0f}s of its {own:.0f}s", wall,
                               peak, result=result, **predicted)
        if code is None:
            return self.record(name, "fail", f"timeout after {timeout:.0f}s", wall, peak, result=result, **predicted)
        problem = (judge(result) if judge else None) if code in ok_codes else \
            f"exit {code}: {(stderr.strip().splitlines() or ['(no stderr)'])[-1][:240]}"
        if problem:
            return self.record(name, "fail", problem, wall, peak, result=result, **predicted)
        return self.record(name, "pass", describe(result) if describe else "ok", wall, peak, result=result,
                           **predicted)

    def peak(self, peak_file: Path, poll: GpuPoll) -> tuple:
        if peak_file.is_file():
            p = json.loads(peak_file.read_text())
            if p.get("max_allocated_bytes"):
                return round(p["max_allocated_bytes"] / 2**20, 1), "torch.cuda.max_memory_allocated in the child"
        if poll.peak is not None:
            return poll.peak, "nvidia-smi memory.used, whole device, polled each second"
        return None, (json.loads(peak_file.read_text()).get("reason") if peak_file.is_file()
                      else "no allocator record (not a Python child) and no nvidia-smi")

    # ---- the items ----

    def facts(self):
        smi = shutil.which("nvidia-smi")
        if smi:
            out = subprocess.run([smi, "--query-gpu=name,driver_version,memory.total,memory.used",
                                  "--format=csv,noheader"], capture_output=True, text=True, timeout=30)
            self.log.write(f"===== nvidia-smi\n{out.stdout}{out.stderr}")
        item = self.run("facts", ["PY", "-m", "steps", "facts"], 90, judge=lambda r: None if r else "no JSON",
                        describe=lambda r: "ok: " + (f"{r['devices'][0]['name']}, bf16 matmul {r['bf16_matmul_tflops']} "
                                                     "TFLOP/s" if r["cuda_available"] else _no_gpu(r, smi)))
        r = item.get("result") or {}
        if r.get("cuda_available"):
            self.cuda = None
        elif item["status"] == "pass":
            self.cuda = _no_gpu(r, smi)
        else:
            self.cuda = f"unknown: the facts item did not pass ({item['reason']})"
        item["nvidia_smi"] = out.stdout.strip() if smi else None

    def install(self):
        if self.wheels is None:
            return self.record("wheels", "skipped", "--no-wheels: the packages installed here are used")
        t0, target = time.perf_counter(), self.work / "site"
        wheels, foreign = _compatible(sorted(self.wheels.glob("*.whl")))
        argv = [sys.executable, "-m", "pip", "install", "-q", "--no-index", "--no-deps", "--no-compile",
                "--no-cache-dir", "--target", str(target), *map(str, wheels)]
        proc = subprocess.run(argv, cwd=ROOT, env=self.env, capture_output=True, text=True, timeout=240)
        self.log.write(f"\n===== wheels: {' '.join(argv)}\n{proc.stdout}{proc.stderr}")
        if proc.returncode:
            return self.record("wheels", "fail", f"pip exit {proc.returncode}: "
                               f"{(proc.stderr.strip().splitlines() or [''])[-1][:240]}",
                               round(time.perf_counter() - t0, 1))
        link_tree(target / "skillos")
        self.env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(target), self.env.get("PYTHONPATH")]))
        needs = subprocess.run([sys.executable, str(HERE / "steps.py"), "requirements", *map(str, wheels)],
                               cwd=ROOT, env=self.env, capture_output=True, text=True, timeout=60)
        unmet = (last_json(needs.stdout) or {}).get("unmet")
        # unmet needs are reported, not failed: jericho names spacy, which the engine never imports;
        # the stack item is the test of what the train path imports
        reason = f"{len(wheels)} wheels + skillos (linked to this tree) into {target}" + \
            (f"; not for this Python: {', '.join(w.name for w in foreign)}" if foreign else "") + \
            (f"; needs not met here: {', '.join(u['needs'] for u in unmet)}" if unmet else "")
        self.record("wheels", "pass", reason, round(time.perf_counter() - t0, 1), unmet=unmet)

    def items_after_install(self):
        tmp, py = self.work, "PY"
        self.run("stack", [py, "-m", "steps", "stack"], 120,
                 judge=lambda r: None if r and not r.get("missing") else f"missing: {(r or {}).get('missing')}")
        device = "cuda" if self.cuda is None else "cpu"  # cpu: an --on-cpu rehearsal
        self.run("tiny_full_bf16", [py, "-m", "steps", "tiny", "full", device], 90)
        self.run("tiny_lora_bf16_gc", [py, "-m", "steps", "tiny", "lora", device], 90)
        # skillos train picks CUDA by itself when torch sees it (training/common/grpo.py: guarded); bf16 is set;
        # no step logs: the bare machine has no tensorboard (training.report_to's default)
        sets = ["--set", "training.bf16=true", "--set", "training.max_steps=2", "--set", "training.report_to=none"]
        self.run("grpo_train_cuda", [py, "-m", "skillos", "train", "training/configs/cpu-smoke.yaml", "--json", *sets,
                                     "--set", f"training.output_dir={tmp / 'grpo'}"], 150, judge=_trained, describe=_steps,
                 train=["training/configs/cpu-smoke.yaml", *sets])
        self.run("selector_train_cuda", [py, "-m", "skillos", "train", "training/configs/selector-cpu.yaml", "--json",
                                         *sets, "--set", f"training.output_dir={tmp / 'selector'}"], 150,
                 judge=_trained, describe=_steps, train=["training/configs/selector-cpu.yaml", *sets])
        self.run("hf_games_cuda", [py, "-m", "skillos", "eval", "tests/gpu/hf-games.yaml", "--json",
                                   "--out", str(tmp / "hf-games")], 120, judge=_played, describe=_games)
        self.accelerate(sets)
        self.real_model(sets)
        for name in CANARIES:
            self.run(name, [py, "-m", "skillos", "canary", name.split("_")[1], "--quick", "--json",
                            "--out", str(tmp / name)], 300,
                     ok_codes=(0, 1),  # 1: it ran and did not learn; that is reported, not failed
                     judge=lambda r: None if r and "passed" in r else "no canary JSON",
                     describe=_canary)

    def real_model(self, sets):
        """The hf executor and the GRPO LoRA smoke on the real small model, where it is fetched."""
        if self.left() < MIN_START_S or (self.cuda and not self.on_cpu) or \
                (self.only and not self.only & set(REAL_MODEL_ITEMS)):
            for name in REAL_MODEL_ITEMS:
                self.run(name, [], 0)  # its one skipped line, without asking for the model first
            return
        listed = subprocess.run([sys.executable, "-m", "skillos", "models", "list", "--json"], cwd=ROOT, env=self.env,
                                capture_output=True, text=True, timeout=60)
        try:
            entry = next((m for m in json.loads(listed.stdout) if m.get("name") == REAL_MODEL), None)
        except ValueError:
            entry = None
        if not (entry and entry.get("fetched")):
            why = (f"{REAL_MODEL} is not fetched here (`skillos models fetch {REAL_MODEL}` needs the package index; "
                   "its 94 MB file is over the device tool's 64 MiB carry)") if listed.returncode == 0 else \
                f"skillos models list failed: {(listed.stderr.strip().splitlines() or [''])[-1][:200]}"
            for name in REAL_MODEL_ITEMS:
                self.record(name, "skipped", "not in --only" if self.only and name not in self.only else why)
            return
        tmp, py = self.work, "PY"
        self.run("smollm2_games_cuda", [py, "-m", "skillos", "eval", "evals/configs/smollm2-hf.yaml", "--json",
                                        "--out", str(tmp / "smollm2-games")], 180, judge=_played, describe=_games)
        self.run("smollm2_grpo_lora_cuda", [py, "-m", "skillos", "train", "training/configs/cpu-smoke-smollm2.yaml",
                                            "--json", *sets, "--set", f"training.output_dir={tmp / 'smollm2-grpo'}"],
                 240, judge=_moved, describe=_steps, train=["training/configs/cpu-smoke-smollm2.yaml", *sets])

    def accelerate(self, sets):
        """`skillos train --backend accelerate` is refused by gate 6 without a canary at the default
        size, so the check runs the launch command it would make (training/common/launch.py) directly."""
        name = "accelerate_launch"
        if self.left() < MIN_START_S or (self.cuda and not self.on_cpu) or (self.only and name not in self.only):
            return self.run(name, [], 0)  # its one skipped line, without deriving configs first
        for n in (2, 1):  # two processes share the one GPU where that works
            config = self.work / f"accelerate-{n}.yaml"
            derive = subprocess.run([sys.executable, str(HERE / "steps.py"), "derive", "training/configs/cpu-smoke.yaml",
                                     str(config), *sets, "--set", "compute.backend=accelerate", "--set",
                                     f"compute.num_processes={n}", "--set",
                                     f"training.output_dir={self.work / f'accelerate-{n}'}"],
                                    cwd=ROOT, env=self.env, capture_output=True, text=True, timeout=60)
            command = subprocess.run([sys.executable, str(HERE / "steps.py"), "launch-command", str(config)],
                                     cwd=ROOT, env=self.env, capture_output=True, text=True, timeout=60)
            argv = (last_json(command.stdout) or {}).get("command") if derive.returncode == 0 else None
            if not argv:
                return self.record(name, "fail", f"no launch command: {(derive.stderr + command.stderr)[-240:]}")
            argv = [sys.executable, "-m", "accelerate.commands.launch"] + argv[2:]  # this Python's accelerate
            item = self.run(name, argv, 120,  # two on one GPU fail fast where they fail
                            describe=lambda r, n=n: f"ran with {n} process{'es' if n > 1 else ''}" +
                            ("; 2 processes failed first (check.log)" if n == 1 else ""))
            if item["status"] == "skipped":
                return item
            if item["status"] == "pass" or n == 1:
                item["num_processes"] = n
                return item
            self.items.remove(item)  # the 1-process try is the item's line in the summary

    def cpu_wall(self, name: str) -> dict:
        """A CUDA item's wall time on a CPU, beside the GPU's, from a run with --on-cpu."""
        for item in self.baseline.get("items", []):
            if item.get("name") == name and item.get("status") == "pass" and not item.get("cuda"):
                return {"cpu_wall_s": item["wall_s"], "cpu_wall_reason": "from the CPU baseline summary"}
        return {"cpu_wall_s": None, "cpu_wall_reason": "unmeasured: no CPU run of it in a baseline summary"}

    def write_summary(self) -> dict:
        """summary.json, rewritten after every item: a call cut off from outside still leaves it."""
        for item in self.items:
            item["cuda"] = self.cuda is None
            if item["name"] in CUDA_ITEMS and self.cuda is None:
                item.update(self.cpu_wall(item["name"]))
        counts = {s: sum(i["status"] == s for i in self.items) for s in ("pass", "fail", "skipped")}
        summary = {"cuda": self.cuda is None, "no_cuda_reason": self.cuda, "python": sys.version.split()[0],
                   "wall_s": round(time.perf_counter() - self.started, 1), "budget_s": self.budget,
                   "load_avg_at_end": [round(x, 1) for x in os.getloadavg()],  # other jobs slow a CPU run
                   "counts": counts, "items": self.items}
        (self.out / "summary.json").write_text(json.dumps(summary, indent=1, default=str) + "\n")
        return summary

    def main(self) -> int:
        try:
            self.facts()
            self.install()
            self.items_after_install()
        finally:
            summary = self.write_summary()
            self.log.close()
            shutil.rmtree(self.work, ignore_errors=True)
        counts = summary["counts"]
        print(f"{counts['pass']} pass, {counts['fail']} fail, {counts['skipped']} skipped in {summary['wall_s']}s; "
              f"{self.out / 'summary.json'}")
        return 1 if counts["fail"] else 0


def _no_gpu(facts: dict, smi) -> str:
    return f"torch {facts.get('torch')} (CUDA build {facts.get('torch_cuda_build')}) sees no GPU" + \
        ("" if smi else "; nvidia-smi not found")


def _trained(result):
    if not result:
        return "no JSON summary"
    steps = result.get("steps") or []
    return None if steps and not result.get("returncode") else f"steps {len(steps)}, returncode {result.get('returncode')}"


def _moved(result):
    """A training run whose weights moved in some step (its learning-signal verdict)."""
    problem = _trained(result)
    if problem:
        return problem
    signal = result.get("signal") or {}
    return None if signal.get("grad_nonzero") else f"no step moved the weights: {signal.get('line')}"


def _steps(result) -> str:
    return f"{len(result['steps'])} steps, {len(result.get('checkpoints') or [])} checkpoints archived"


def _played(result):
    arms = (result or {}).get("arms") or {}
    return None if arms and all(a.get("measured") for a in arms.values()) else f"arms measured: {arms or None}"


def _games(result) -> str:
    return "; ".join(f"{name}: {a['measured']} games, {a['actions']} actions" for name, a in result["arms"].items())


def link_tree(dst: Path) -> None:
    """skillos as pyproject maps it (toolkit/ is `skillos`, evals/ is `skillos.evals`, ...), as a
    folder of links into this tree: what an editable install makes, with no build tools (the bare
    machine may lack `wheel`), and always the current code."""
    import tomllib

    mapping = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["package-dir"]
    dst.mkdir(parents=True)
    for child in (ROOT / mapping["skillos"]).iterdir():
        if child.name != "__pycache__":
            (dst / child.name).symlink_to(child)
    for package, folder in mapping.items():
        if package != "skillos":
            (dst / package.split(".", 1)[1]).symlink_to(ROOT / folder)


def _compatible(wheels: list[Path]) -> tuple[list[Path], list[Path]]:
    """The wheels this Python can install, and the rest (a py312 wheel on a 3.11 CPU machine)."""
    try:
        from packaging.tags import sys_tags
        from packaging.utils import parse_wheel_filename
    except ImportError:
        from pip._vendor.packaging.tags import sys_tags
        from pip._vendor.packaging.utils import parse_wheel_filename
    here = set(sys_tags())
    ok = [w for w in wheels if parse_wheel_filename(w.name)[3] & here]
    return ok, [w for w in wheels if w not in ok]


def parse(argv: list[str]) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("out", nargs="?", default=os.environ.get("OUT"), help="output folder (default $OUT)")
    ap.add_argument("--wheels", type=Path, default=None, help="carried wheels (default .whl, from prepare_wheels.sh)")
    ap.add_argument("--no-wheels", action="store_true", help="use the packages installed here")
    ap.add_argument("--budget", type=float, default=BUDGET_S, help=f"seconds of items (default {BUDGET_S})")
    ap.add_argument("--baseline", type=Path, help="a CPU run's summary.json: the canaries' CPU wall times "
                    f"(default {BASELINE.relative_to(ROOT)} if present)")
    ap.add_argument("--only", type=lambda v: set(filter(None, v.split(","))), default=set(),
                    help="run just these items (comma-separated names; facts always runs)")
    ap.add_argument("--on-cpu", action="store_true", help="run the CUDA items without CUDA too: a rehearsal of "
                    "their commands, and the CPU baseline of their wall times (give --budget for it)")
    return ap.parse_args(argv)


def setup(args: argparse.Namespace) -> Check:
    if not args.out:
        raise BadInput("no output folder: give it as the first argument or set $OUT")
    out = Path(args.out)
    if out.exists() and not out.is_dir():
        raise BadInput(f"output folder {out} is a file")
    wheels = None
    if not args.no_wheels:
        wheels = args.wheels or ROOT / ".whl"
        if not wheels.is_dir() or not any(wheels.glob("*.whl")):
            raise BadInput(f"no wheels in {wheels}: run tests/gpu/prepare_wheels.sh here first "
                           "(and carry .whl), or pass --no-wheels to use the packages installed here")
    baseline, path = {}, args.baseline or (BASELINE if BASELINE.is_file() else None)
    if path:
        try:
            baseline = json.loads(path.read_text())
        except (OSError, ValueError) as exc:
            raise BadInput(f"--baseline {path}: not a readable summary ({exc})")
    out.mkdir(parents=True, exist_ok=True)
    unknown = args.only - set(ITEMS)
    if unknown:
        raise BadInput(f"--only: no item {', '.join(sorted(unknown))}; the items are {', '.join(ITEMS)}")
    return Check(out, wheels, args.budget, baseline, args.on_cpu, args.only)


def main(argv: list[str]) -> int:
    try:
        check = setup(parse(argv))
    except BadInput as exc:
        print(f"gpu check: {exc}", file=sys.stderr)
        return 2
    return check.main()


def _canary(r: dict) -> str:
    """A quick canary's line: whether its weights moved (its size cannot show learning: the
    smallest p its n allows is above alpha) and its verdicts."""
    res = r.get("resolution") or {}
    return (f"ran; weights moved: {res.get('weights_moved') or 'unmeasured'}; learned (passed): {r['passed']} "
            f"(smallest p at n {res.get('n')}: {res.get('smallest_p')})")


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

