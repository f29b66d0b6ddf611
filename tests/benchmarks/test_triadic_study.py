"""The Jester self-learning loop: lessons parsing and de-duplication (MiniLM), the OFF/ON
protocol (game k's Jester reads lessons of games 1..k-1 of its own cell only), per-model
isolation, resume, and the lessons reaching an LLM policy's prompt through the playbook slot."""
import json
import re

import numpy as np
import pytest

from socialgym_agents.llm.backend import Reply
from socialgym_agents.llm.config import LLMConfig
from socialgym_agents.llm.policy import LLMPolicy
from socialgym_agents.runner import PolicyPool
from socialgym_benchmarks.studies.triadic import lessons as L
from socialgym_benchmarks.studies.triadic.study import StudyConfig, cell_name, run_study
from socialgym_benchmarks.studies.triadic.cli import register
from socialgym_env.logs import read_episodes

TINY = {"max_debate_turns": 1, "max_explanation_turns": 0, "max_days": 2, "measure": False}


class ExactEncoder:
    """Identical texts have similarity 1, different ones 0 (a stand-in for MiniLM)."""

    def __init__(self):
        self.index = {}

    def __call__(self, texts):
        for t in texts:
            self.index.setdefault(t, len(self.index))
        out = np.zeros((len(texts), 64))
        for row, t in enumerate(texts):
            out[row, self.index[t] % 64] = 1.0
        return out


class CountingReflector:
    """Game-numbered lessons, plus one repeated lesson that de-duplication must drop."""

    def __init__(self):
        self.prompts = []

    def __call__(self, prompt, seed):
        self.prompts.append(prompt)
        k = len(self.prompts)
        return "Sure! " + json.dumps({"to_do": [f"lesson from game {k}", "always the same"], "to_not_do": [],
                                      "winning_tactics": []})


def jester_playbook(record):
    seat = record["tags"]["jester"]
    return next(s["playbook"] for s in record["roster"] if s["agent"] == seat)


def test_parse_lessons_is_tolerant():
    got, err = L.parse_lessons('noise {"to_do": ["a", 3, " b  c "], "winning_tactics": "w"} tail')
    assert err is None and got == {"to_do": ["a", "b c"], "to_not_do": [], "winning_tactics": ["w"]}
    got, err = L.parse_lessons("no json here")
    assert got == L.empty_lessons() and "no JSON" in err


def test_minilm_drops_paraphrases_keeps_new_advice():
    encoder = L.MiniLMEncoder()
    kept = ["Bid high early on day one so everyone hears you first."]
    accepted, dropped = L.drop_near_duplicates(
        ["Bid high early on the first day so everyone hears you first.",   # paraphrase
         "Never claim to be the Doctor.",                                   # new
         "Never claim to be the Doctor!"],                                  # duplicate of the new one
        kept, encoder, threshold=L.DEFAULT_THRESHOLD)
    assert accepted == ["Never claim to be the Doctor."]
    assert [d[0] for d in dropped] == ["Bid high early on the first day so everyone hears you first.",
                                      "Never claim to be the Doctor!"]
    assert all(sim >= L.DEFAULT_THRESHOLD for _, _, sim in dropped)


def test_off_on_protocol_isolation_and_resume(tmp_path):
    models = ["scripted:heuristic", "scripted:random"]
    cfg = StudyConfig(models=models, games=3, out=str(tmp_path), config=TINY)
    reflector = CountingReflector()
    results = run_study(cfg, encoder=ExactEncoder(), reflector=reflector, progress=lambda s: None)
    assert list(results) == [cell_name(m, c) for m in models for c in ("OFF", "ON")]
    for model in models:
        off, on = results[cell_name(model, "OFF")], results[cell_name(model, "ON")]
        assert [jester_playbook(r) for r in off] == [None, None, None]
        assert not (tmp_path / "lessons" / f"{cell_name(model, 'OFF')}.json").exists()
        # Paired design: game k of OFF and ON is the same deal.
        assert [r["seed"] for r in off] == [r["seed"] for r in on]
        assert jester_playbook(on[0]) is None           # game 1 has nothing to read yet
        book = json.loads((tmp_path / "lessons" / f"{cell_name(model, 'ON')}.json").read_text())
        assert book["model"] == model and sorted(book["reflections"]) == ["1", "2", "3"]
        assert [d["text"] for d in book["dropped"]] == ["always the same", "always the same"]
    # Reflections counted per cell: the second model's ON cell starts from its own empty file.
    assert len(reflector.prompts) == 6
    assert "(none yet)" in reflector.prompts[3]
    # Each model's game k reads exactly the lessons of its own games 1..k-1.
    for model in models:
        on = results[cell_name(model, "ON")]
        start = 0 if model == models[0] else 3
        assert f"lesson from game {start + 1}" in jester_playbook(on[1])
        assert f"lesson from game {start + 2}" not in jester_playbook(on[1])
        assert f"lesson from game {start + 2}" in jester_playbook(on[2])
        assert jester_playbook(on[2]).count("always the same") == 1
        assert [r["tags"]["lessons_in_prompt"] for r in on] == [0, 2, 3]
    # Resume: nothing replayed, nothing reflected twice.
    again = run_study(cfg, encoder=ExactEncoder(), reflector=reflector, progress=lambda s: None)
    assert len(reflector.prompts) == 6
    assert [r["episode_id"] for r in again[cell_name(models[0], "ON")]] == \
        [r["episode_id"] for r in results[cell_name(models[0], "ON")]]
    log = tmp_path / "logs" / f"{cell_name(models[0], 'ON')}.jsonl"
    assert len(list(read_episodes(log))) == 3


class ScriptedBackend:
    kind, model_name = "fake", "fake"

    def __init__(self, reply):
        self.reply = reply
        self.chats = {}          # seat key -> the chats (lists of message texts) it was sent

    def complete(self, items):
        self.last_items = list(items)
        for item in items:
            self.chats.setdefault(item.key, []).append([m["content"] for m in item.messages])
        return [Reply(self.reply) for _ in items]


def test_lessons_reach_the_llm_jester_prompt(tmp_path):
    """With an LLM policy the lessons go through the playbook slot into the Jester's prompt only."""
    play = LLMPolicy(ScriptedBackend('{"action_type": "pass", "argument": ""}'), LLMConfig(max_retries=0), "fake")
    reflect = LLMPolicy(ScriptedBackend('{"to_do": ["Accuse the quietest player loudly."]}'), LLMConfig(), "fake")
    pool = PolicyPool(prebuilt={"fake": play, "fake?max_new_tokens=400&context=0": reflect})
    cfg = StudyConfig(models=["fake"], games=2, conditions=["ON"], out=str(tmp_path), config=TINY)
    on = run_study(cfg, pool=pool, encoder=ExactEncoder(), progress=lambda s: None)["fake-ON"]
    game2, jester = on[1]["episode_id"], on[1]["tags"]["jester"]
    seats = {key[1]: chats for key, chats in play.backend.chats.items() if key[0] == game2}
    assert len(seats) >= 8 and jester in seats       # a seat killed on night 1 never acts
    for seat, chats in seats.items():
        if seat == jester:     # the lessons head every chat of the Jester's seat
            assert all(chat[0].startswith(L.PLAYBOOK_HEADER) and "Accuse the quietest player loudly." in chat[0]
                       for chat in chats)
        else:
            assert not any(L.PLAYBOOK_HEADER in message for chat in chats for message in chat)
    game1 = [chats for key, chats in play.backend.chats.items() if key[0] == on[0]["episode_id"]]
    assert not any(L.PLAYBOOK_HEADER in m for chats in game1 for chat in chats for m in chat)


def test_cli_rejects_bad_condition_and_analyzes(tmp_path):
    import typer
    from typer.testing import CliRunner
    app = typer.Typer()
    register(app)
    runner = CliRunner()
    bad = runner.invoke(app, ["jester", "run", "--conditions", "MAYBE", "--out", str(tmp_path)])
    assert bad.exit_code == 2 and "valid values are OFF, ON" in bad.output
    missing = runner.invoke(app, ["analyze", str(tmp_path / "nope")])
    assert missing.exit_code == 2 and "does not exist" in missing.output
    ok = runner.invoke(app, ["jester", "run", "--models", "scripted:heuristic", "--games", "1", "--conditions", "OFF",
                             "--out", str(tmp_path), "-c", "max_days=1", "-c", "measure=false"])
    assert ok.exit_code == 0, ok.output
    done = runner.invoke(app, ["analyze", str(tmp_path)])
    assert done.exit_code == 0, done.output
    assert "Jester wins" in done.output and (tmp_path / "analysis" / "win_rates.csv").exists()


def test_another_model_can_write_the_lessons(tmp_path):
    reflect = LLMPolicy(ScriptedBackend('{"winning_tactics": ["Stay vague about your role."]}'), LLMConfig(), "fake")
    pool = PolicyPool(prebuilt={"fake?max_new_tokens=400&context=0": reflect})
    cfg = StudyConfig(models=["scripted:heuristic"], games=1, conditions=["ON"], out=str(tmp_path), config=TINY,
                      reflector="fake")
    run_study(cfg, pool=pool, encoder=ExactEncoder(), progress=lambda s: None)
    book = json.loads((tmp_path / "lessons" / "scripted_heuristic-ON.json").read_text())
    assert book["lessons"]["winning_tactics"] == ["Stay vague about your role."]


def test_reflection_is_decoded_under_the_lessons_grammar(tmp_path):
    """A local model writes its lessons under a grammar of the three lists (servers get the JSON
    schema), so a small model's reflection always parses; constrained=0 asks freely."""
    grammar = L.lessons_grammar(30)
    good = '{"to_do": ["Bid early."], "to_not_do": ["Stay quiet."], "winning_tactics": ["Act odd."]}'
    assert grammar.finished(grammar.advance(grammar.start(), good))
    assert L.parse_lessons(good)[0]["to_not_do"] == ["Stay quiet."]
    for bad in ('[R1 debate_speak] [R1 debate_speak]', '{"to_do": "Bid early."}', '{"to_do": ["x' + "y" * 40):
        assert not grammar.advance(grammar.start(), bad)
    for spec_options, constrained in (("max_new_tokens=400&context=0", True),
                                      ("constrained=0&max_new_tokens=400&context=0", False)):
        reflect = LLMPolicy(ScriptedBackend(good), LLMConfig(constrained=constrained), "fake")
        pool = PolicyPool(prebuilt={f"fake?{spec_options}": reflect})
        spec = "fake?constrained=0" if not constrained else "fake"
        cfg = StudyConfig(models=["scripted:heuristic"], games=1, conditions=["ON"], out=str(tmp_path / spec_options),
                          config=TINY, reflector=spec)
        run_study(cfg, pool=pool, encoder=ExactEncoder(), progress=lambda s: None)
        item = reflect.backend.last_items[0]
        assert (item.grammar is not None) == constrained and (item.schema == L.LESSONS_SCHEMA) == constrained


# ----------------------------------------------------------------------------- fidelity to seed 002
# Seed 002, App. O.4, as typeset (the listing's arrow glyph left out): the prompt must hold every
# sentence of it, typos included.
SEED_O4 = (
    "You are the Jester reflecting on a completed Werewolf game. Your goal is to learn from this experience to "
    "improve future games. GAME OUTCOME: You {outcome} GAME WINNER: {game_winner} — YOUR PRIVATE THOUGHTS DURING "
    "THE GAME: {scratchpad_text} — FULL GAME CONVERSATION: {conversation_text} — YOUR EXISTING LEARNINGS (DO NOT "
    "REPEAT THESE): {current_learnings_text} — You are the jester. Your role is to win the game by getting yourself "
    "exiled during the game. If the villagers find out you are the jester and dont vote you out then you loose. If "
    "the villagers think you are a genuine villager and dont vote you out, then also you loose. You ONLY win if "
    "eliminated during the voting phase between the villagers. Analyse the game, outcomes, what worked and what "
    "didnt in your favor. Based on this game, reflect on what you learned. Think about: 1. What tactics worked or "
    "didn’t work? 2. What should you do more of or avoid in future games? 3. How did other players react to your "
    "behavior? 4. What made players suspicious of you (good) or identify you as Jester (bad)? Respond ONLY with this "
    "exact JSON format: { \"to_do\": [\"specific actionable thing to do in future games\", …], \"to_not_do\": "
    "[\"specific thing to avoid in future games\", …], \"winning_tactics\": [\"tactic that helped get exiled\", …] } "
    "CRITICAL RULES: - DO NOT add items that are already in your existing learnings (check above) - DO NOT add items "
    "that are semantically similar to existing learnings. Add new learnings which can help you win in the future. "
    "Tell what worked and what did not work to your future self. Tell concisely and clearly. - If something is "
    "already present in meaning then DONOT add it again. This is very important. Only add helpful things. - Only add "
    "genuinely NEW insights that are not covered by existing learnings - If this game didn’t teach you anything new, "
    "that your existing leanrings then only return empty lists! - Each item should be a concise, specific insight "
    "(1-2 sentences max) - Only add items relevant to this game’s outcome. Whether you win or loose analyse the "
    "reasons, what went wrong in the game and what you can do to improve your chances of winning in the future. Be "
    "specific about tactics, behaviors, and reactions you observed. - Don’t add generic advice - be specific based on "
    "what happened - Focus on winning_tactics and actionable improvements - Its very important to keep adding reasons "
    "you lost or won, based on what others did and your action interactions so you can use these later to make better "
    "decisions. - If you already have the SAME learning in your existing learnings, but worded differently, then also "
    "consider as duplicate and DONOT add again. No extra text, no markdown, no code fences. Just the JSON.")


def _typeset(text: str) -> str:
    """What typesetting does to the prompt: --- becomes an em dash, ' a curly quote, ... an
    ellipsis, line breaks spaces; JSON braces lose their inner spacing here."""
    text = text.replace("---", "—").replace("'", "’").replace("...", "…")
    text = re.sub(r"\s+", " ", text).strip()
    return re.sub(r"\{ ", "{", re.sub(r" \}", "}", text))


def test_reflection_prompt_is_seed_002_verbatim():
    slots = {k: "{" + k + "}" for k in ("outcome", "game_winner", "scratchpad_text", "conversation_text",
                                         "current_learnings_text")}
    assert _typeset(L.REFLECTION_PROMPT.format(**slots)) == _typeset(SEED_O4)
    for sentence in ("If you already have the SAME learning in your existing learnings, but worded differently",
                     "Its very important to keep adding reasons you lost or won"):
        assert sentence in L.REFLECTION_PROMPT
    record = {"rewards": {"p3": 1}, "transcript": ["Day 1: Ana accuses Bo."], "reason": "the Jester wins alone"}
    prompt = L.reflection_prompt(record, "p3", L.empty_lessons())
    assert "GAME OUTCOME: You won" in prompt and L.NO_SCRATCHPAD in prompt and "Ana accuses Bo." in prompt


def test_fixed_regime_keeps_the_jesters_seat_and_name_and_shuffled_deals_afresh():
    import socialgym_env
    from socialgym_benchmarks.studies.triadic.study import GAME, game_config, game_seeds, jester_deal
    env = socialgym_env.make(GAME, **TINY)
    deals = {}
    for roles in ("fixed", "shuffled"):
        cfg = StudyConfig(games=6, seed=3, roles=roles, config=TINY)
        seeds = game_seeds(cfg, game_config(cfg))
        assert len(set(seeds)) == 6
        deals[roles] = [jester_deal(env, s) for s in seeds]
    assert len(set(deals["fixed"])) == 1 and deals["fixed"][0] == deals["shuffled"][0]
    assert len(set(deals["shuffled"])) > 1
    with pytest.raises(ValueError, match="roles must be one of fixed, shuffled"):
        StudyConfig(roles="random")


def test_a_study_folder_is_not_resumed_under_the_other_regime(tmp_path):
    (tmp_path / "study.json").write_text(json.dumps({"games": 2}))      # written before the regimes: shuffled
    with pytest.raises(ValueError, match="roles=shuffled"):
        run_study(StudyConfig(models=["scripted:random"], games=1, out=str(tmp_path), config=TINY), progress=lambda m: None)
