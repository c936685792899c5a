"""compute: where a launch runs and what it reserves (GPUs, model servers, the watchdog, Ray)."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from skillos import registry
from skillos.errors import ConfigError
from skillos.config.fields import choice, did_you_mean

STOP_ON = ("stall", "device-idle")  # watchdog alarms that may stop a launch (compute.stop_on)
STOP_GRACE_S = 30.0  # after the watchdog's SIGTERM, a stopped launch's time to save before SIGKILL
VLLM_UTILIZATION = 0.9  # vLLM's (and `trl vllm-serve`'s) default gpu_memory_utilization
VLLM_MAX_SEQS = 256  # vLLM's max_num_seqs default: requests one engine runs at once
SERVED_ROLES = ("executor", "judge")  # sections a launch may serve from GPUs of its own (compute.servers)
SERVER_KEYS = {"gpus": (1, 1024), "tensor_parallel_size": (1, 1024), "gpu_memory_utilization": (0.01, 1.0),
               "max_model_len": (1, 1 << 22), "max_num_seqs": (1, 1 << 20)}
GPU_SPEC = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,39}(:[1-9][0-9]{0,3})?")  # TYPE[:N], N >= 1
MAX_GPUS_PER_MACHINE = 64
RAY_ADDRESS = re.compile(r"auto|(ray://)?([A-Za-z0-9][A-Za-z0-9.-]{0,252}|\[[0-9A-Fa-f:.]+\]):[0-9]{1,5}")


@dataclass
class ComputeConfig:
    backend: str = field(default="local", metadata={"choices": registry.COMPUTE, 
        "help": f"where a launch runs (skillos/registry.py COMPUTE): {registry.COMPUTE.listed()}; ray: each arm, "
                "checkpoint or canary run a Ray task on compute.ray_address, the driver writing every row "
                f"({registry.RAY_INSTALL})"})
    num_processes: int = field(default=1, metadata={"bounds": (1, 4096), 
        "help": "training processes across every machine (accelerate: one per GPU); multiplies the effective "
                "batch"})
    deepspeed_config: str | None = field(default=None, metadata={
        "help": "a DeepSpeed config file for the accelerate launch, relative to the config file"})
    gpu: str | None = field(default=None, metadata={"help": 'the GPUs a launch uses, TYPE or TYPE:N (N >= 1), e.g. '
                                                    '"H100:8": Modal\'s request, the plan\'s GPU-hours and the gates '
                                                    'that guard GPU launches (approved plan, canary)'})
    step_minutes: float | None = field(default=None, metadata={"bounds": (1e-6, 1e6), 
        "help": "measured minutes per training step, for save_steps"})
    max_checkpoint_gap_minutes: float = field(default=60.0, metadata={"bounds": (1e-3, 1e6), "help": "the most work a crash may lose"})
    watchdog: bool = field(default=True, metadata={"help": "gate 7: the launch runs under the watchdog"})
    stall_minutes: float = field(default=30.0, metadata={"bounds": (1e-3, 1e6), 
        "help": "the watchdog alarms when the output folder has not grown, or the device has been idle, this "
                "long while the job is alive"})
    watch_after_minutes: float = field(default=30.0, metadata={"bounds": (0.0, 1e6),
        "help": "gate 7 outlives the job: after a launch on GPUs exits (any way) its watchdog keeps watching the "
                "box this long, alarming in the ledger when the GPUs sit idle 10 min (or this, if shorter) or the "
                "job died without its final row, then stops itself (skillos ledger watch lists it); 0: it stops "
                "with the job. A launch without GPUs, or on a machine that ends with the job (modal), is watched "
                "until the job ends and its final row is checked"})
    host_ram_gib: float | None = field(default=None, metadata={"bounds": (0.001, 1e7),
        "help": "each machine's CPU memory in GiB, against which the memory plan (gate 7) places what DeepSpeed "
                "offloads there (Adam states, weights); None: unknown, a WARN where anything is offloaded (the "
                "plan reads the same on any machine, so it never assumes this one's)"})
    max_cost_usd: float = field(default=10.0, metadata={"bounds": (0.0, 1e9),
        "help": "the cost gate: a launch whose paid API calls (executor, curator, judge, optimizer, sleep, "
                "teacher on openai or anthropic) are estimated above this many USD, or at an unknown cost, needs "
                "an approved plan (skillos plan, then a person's skillos approve), as a GPU launch does"})
    prompt_tokens_per_call: int = field(default=2000, metadata={"bounds": (1, 1 << 22),
        "help": "the cost estimate's prompt tokens per paid API call (an assumption until a run measured "
                "them: skillos report shows the tokens a run's calls used)"})
    completion_tokens_per_call: int = field(default=512, metadata={"bounds": (1, 1 << 22),
        "help": "the cost estimate's completion tokens per call of a section with no max_tokens (one with "
                "max_tokens is costed at it, the most a reply bills)"})
    stop_on: list = field(default_factory=list, metadata={"choices": STOP_ON, 
        "help": "alarms on which the watchdog stops a training launch (SIGTERM, then SIGKILL after "
                "config.compute.STOP_GRACE_S), recorded in the ledger: stall (the output folder has not grown for "
                "stall_minutes while the job lives), device-idle (the GPUs idle that long); empty: it alarms and "
                "records only"})
    # The step plan (training/common/plan.py, printed by `train --dry-run`) and multi-GPU layouts.
    executor_latency_s: float | None = field(default=None, metadata={"bounds": (0.0, 86_400.0), 
        "help": "seconds per executor action at the endpoint (the step plan)"})
    gpu_seconds_per_step: float | None = field(default=None, metadata={"bounds": (1e-6, 1e9), 
        "help": "a step's generation + update with no executor wait (the step plan)"})
    vllm_server_gpus: int = field(default=0, metadata={"bounds": (0, 4096), 
        "help": "GPUs per machine for `trl vllm-serve` (training.vllm_mode: server)"})
    servers: dict = field(default_factory=dict, metadata={
        "help": "model servers a launch starts on GPUs of its own (`vllm serve`, reached by the role's openai "
                "backend at its base_url), by role: {executor: {gpus: 1}, judge: {gpus: 2}}; each may say "
                "tensor_parallel_size (default: its gpus), gpu_memory_utilization (0.9), max_model_len (the "
                "model's), max_num_seqs (256). The memory plan (gate 7) places them and the step plan caps "
                "concurrency at the executor server's slots"})
    num_machines: int = field(default=1, metadata={"bounds": (1, 4096), 
        "help": "accelerate multi-node: machines; num_processes counts every machine's"})
    machine_rank: int = field(default=0, metadata={"bounds": (0, 4095), 
        "help": "accelerate multi-node: this machine's rank (0: the main one)"})
    main_process_ip: str | None = field(default=None, metadata={
        "help": "accelerate multi-node: the main machine's address (needed when num_machines > 1)"})
    main_process_port: int = field(default=29500, metadata={"bounds": (1, 65_535), "help": "accelerate multi-node: the main machine's port"})
    # compute.backend ray (evals/distributed.py): where the arms' tasks run and what each asks for.
    ray_address: str | None = field(default=None, metadata={
        "help": "compute.backend ray: the cluster to join (ray.init(address=...), e.g. ray://HEAD:10001 or auto); "
                "None: a local cluster started for the run and stopped after it"})
    ray_max_retries: int = field(default=3, metadata={"bounds": (0, 100), 
        "help": "compute.backend ray: times a task is run again after its worker dies (an arm restarts from the "
                "rows the run folder already holds, a canary run from its folder)"})
    ray_gpus_per_task: float | None = field(default=None, metadata={"bounds": (0.0, 64.0), 
        "help": "compute.backend ray: GPUs each task reserves; None: 1 for an arm whose executor, curator or judge "
                "runs its model in the task (hf, vllm), or a canary run that trains one, when compute.gpu is set, "
                "else 0 (Ray hides the GPUs from a task that reserves none)"})

    def rules(self, where: str) -> None:
        address = self.ray_address
        if address is not None and not RAY_ADDRESS.fullmatch(address):
            raise ConfigError(f"{where}.ray_address: {address[:60]!r}: expected auto, HOST:PORT or ray://HOST:PORT "
                              "(unset: a local cluster started for the run)")
        gpu = self.gpu
        if gpu is not None and (not GPU_SPEC.fullmatch(gpu) or int(gpu.partition(":")[2] or 1) > MAX_GPUS_PER_MACHINE):
            raise ConfigError(f"{where}.gpu: {gpu[:60]!r}: expected TYPE or TYPE:N with N GPUs per machine, 1 or more "
                              f"and at most {MAX_GPUS_PER_MACHINE} (e.g. H100:8); a launch on the CPU leaves it unset")
        self.check_servers(where)

    def check_servers(self, where: str) -> None:
        """compute.servers: known roles, each a mapping of known keys within their bounds (whether the
        role's backend reaches its server is gate 7's memory check)."""
        for role, spec in self.servers.items():
            choice(role, SERVED_ROLES, f"{where}.servers role")
            if not isinstance(spec, dict):
                raise ConfigError(f"{where}.servers.{role}: a mapping such as {{gpus: 1}}, got {spec!r}")
            for key, value in spec.items():
                at = f"{where}.servers.{role}.{key}"
                if key not in SERVER_KEYS:
                    raise ConfigError(f"{at}: unknown key{did_you_mean(str(key), list(SERVER_KEYS))}")
                low, high = SERVER_KEYS[key]
                if isinstance(value, bool) or not isinstance(value, (int, float)) or not low <= value <= high \
                        or (isinstance(low, int) and not isinstance(value, int)):
                    raise ConfigError(f"{at}: a number from {low} to {high}, got {value!r}")
