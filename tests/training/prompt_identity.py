"""The LLM policy's prompt ids, recorded from the local backend's own assembly: the reference
that the trainers' prompts are compared with (test_policy_layout, test_selfplay)."""
from socialgym_agents.llm.backend import Reply
from socialgym_agents.llm.guided import common_prefix, forced_prefix
from socialgym_agents.llm.hf_backend import HFBackend

MODEL_CONTEXT = 8192      # SmolLM2's (the training scripts read it from the model config)


def pick(k: int, finite: list) -> str:
    """The k-th decision's reply in the prompt-identity tests: a legal one that changes from
    decision to decision."""
    return finite[k % len(finite)]


class RecordingBackend(HFBackend):
    """The HF backend's own prompt assembly and budget (its ``_prompt_ids`` / ``fits``), without a
    model: records the ids of every request (prefilled reply prefix included) and answers with
    :func:`pick` (generation: the grammar's legal list; scoring: the candidates)."""

    def __init__(self, tokenizer, config):
        self.tokenizer, self.config, self.model_name = tokenizer, config, "smollm2"
        self.context = config.context or MODEL_CONTEXT
        self.seen = []

    def release(self, key):
        pass

    def complete(self, items):
        out = []
        for item in items:
            self.seen.append(self._prompt_ids(item, forced_prefix(item.grammar))[0])
            out.append(Reply(pick(len(self.seen) - 1, item.grammar.finite)))
        return out

    def score(self, items, candidates):
        out = []
        for item, cands in zip(items, candidates):
            self.seen.append(self._prompt_ids(item, common_prefix(cands) if len(cands) > 1 else cands[0])[0])
            chosen = pick(len(self.seen) - 1, cands)
            out.append([0.0 if c == chosen else -50.0 for c in cands])
        return out
