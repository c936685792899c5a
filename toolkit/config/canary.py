"""canary: a learning canary's miniature (training/canary, training/configs/canary-*.yaml)."""

from __future__ import annotations

from dataclasses import dataclass, field

from skillos.errors import ConfigError

CANARY_SPLITS = ("sealed", "tuning")


@dataclass
class CanaryConfig:
    """A learning canary's miniature (training/canary, training/configs/canary-*.yaml): the
    supervised warm start the tiny model trains from before GRPO."""
    warmup_steps: int = field(default=400, metadata={"bounds": (1, 1_000_000), "help": "supervised steps of the warm start"})
    warmup_groups: int = field(default=12, metadata={"bounds": (1, 100_000), 
        "help": "train groups whose first curator inputs the warm start answers"})
    warmup_learning_rate: float = field(default=3e-3, metadata={"bounds": (1e-12, 1.0), "help": "learning rate of the warm start"})
    # A random-init model attends evenly to its whole prompt, so one word among ~700 tokens moves
    # its output by ~1/700: warmed on 80 real curator prompts it did not learn to say the task's
    # type in 1,600 supervised steps; attending to its last 128 tokens, it did in 200 (measured).
    attention_window: int | None = field(default=None, metadata={"bounds": (1, 1_000_000), 
        "help": "the warm start's tiny model attends to its last N tokens in every layer (sliding-window "
                "attention, kept by every run trained from it): a policy that can read the task in its prompt; "
                "None: the whole prompt"})
    # A random-init model with a byte-level vocabulary spells a tool call in ~70 tokens, so the skill it
    # chooses sits ~45 tokens after the word that decides it and its content's later words must agree
    # with its first: from a 0/1 reward on the right skill, every policy-gradient run moved the choice
    # for both task types alike; with each operation one token (and the call's frame two), one run of
    # 150 steps learned it by type (held-out 36 of 36 heat, 33 of 36 clean), others from another warm
    # start did not (tuning split, measured: docs/canaries.md, stop 76). Off in every shipped canary.
    call_tokens: bool = field(default=False, metadata={
        "help": "the warm start adds the tool calls it teaches to the tiny model's vocabulary, each element of "
                "a call's list (an operation) one token and the frame around the list two, kept by every run "
                "trained from it: a stand-in for "
                "a pretrained model, whose vocabulary holds whole words, so that choosing a skill is one sampled "
                "token a few tokens after the task's type; False: the model's own vocabulary"})
    decisive_train: bool = field(default=False, metadata={
        "help": "the curator canary's GRPO draws its groups from the train games each task type's own skill wins "
                "and the other's loses (played before training), so every group's task reward separates the skills "
                "(at env.max_steps 27, 39 of 160: the rest give every completion of a group the same task reward); "
                "the warm start and the held-out games are not chosen; False: every train game"})
    # A warm start's draw decides whether it reads: of four curator warm starts with call tokens, the
    # one whose own turns did not learn to say their task's type said it in 75 of 141 held-out turns
    # (chance) and an executor-free policy-gradient probe from it learned no choice; from the three
    # that learned it, 9 of 9 of stop 77's probe runs in its own settings did (tuning split, measured:
    # docs/canaries.md, stop 77). Off in every shipped canary: the strict check (every said token of
    # all 480 turns) failed both warm starts without call tokens kept from earlier looks, so there more
    # draws would cost minutes and, on that evidence, find none that passes.
    warmup_draws: int = field(default=1, metadata={"bounds": (1, 20),
        "help": "warm starts drawn (each with the next seed) until one whose turns learned to say what they "
                "read, judged on its own training turns only (never a held-out game); the canary records which "
                "draw it kept; 1: the first, learned or not"})
    split: str = field(default="sealed", metadata={"choices": CANARY_SPLITS, 
        "help": "the held-out games a canary is judged on. sealed: drawn with env seed canary.sealed_seed (+ the "
                "training seed, for optimize), games tuning never reads; the ledger counts every judged look at "
                "them and the pooled p is Bonferroni-corrected over the looks; only a sealed canary vouches for a "
                "launch. tuning: env.seed's held-out games (`skillos canary --tune`, --quick), free to look at, "
                "vouching for nothing"})
    sealed_seed: int = field(default=1000, metadata={"bounds": (0, 2**31 - 1), 
        "help": "the env seed of the sealed held-out games; a new value draws a fresh sealed split (its looks "
                "start at 0: the old split's looks stay in the ledger)"})
    seeds: list = field(default_factory=lambda: [0, 1, 2], metadata={
        "help": "training seeds: each trains the run and both negative controls from the one warm start and is "
                "judged on its own evaluation draws; the pass rule (training/canary RULE) pools them and asks "
                "every seed's run to move up"})

    def rules(self, where: str) -> None:
        seeds = self.seeds
        if (not seeds or len(seeds) > 64
                or not all(isinstance(x, int) and not isinstance(x, bool) and 0 <= x < 2**31 for x in seeds)
                or len(set(seeds)) != len(seeds)):
            raise ConfigError(f"{where}.seeds: 1 to 64 distinct integer seeds from 0, got {seeds!r}")
