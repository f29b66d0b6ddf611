"""Detection datasets: public-only inputs, cuts before role reveals, episode-level splits."""
import copy

from socialgym_training.detection_data import (REVEAL, TARGET, episode_examples, load_examples, public_messages,
                                     split_episodes, statement_examples)
from socialgym_training.detection_logs import HIDDEN_TEAMS


def test_every_game_gives_examples_with_both_labels(detection_records):
    for game, records in detection_records.items():
        examples = [ex for r in records for ex in episode_examples(r)]
        assert {ex.label for ex in examples} == {0, 1}, game
        # one example per player at each cut
        for r in records:
            cuts = {ex.cut for ex in episode_examples(r)}
            assert len(episode_examples(r)) == len(cuts) * len(r["roster"])


def test_labels_follow_the_roster_teams(detection_records):
    for game, records in detection_records.items():
        for r in records:
            team = {s["agent"]: s["team"] for s in r["roster"]}
            for ex in episode_examples(r):
                assert ex.label == int(team[ex.target] in HIDDEN_TEAMS[game])


def test_inputs_hold_only_public_lines_before_any_reveal(detection_records):
    for game, records in detection_records.items():
        for r in records:
            names = {s["agent"]: s["name"] for s in r["roster"]}
            public = public_messages(r)
            # private texts nobody repeated in public (a Seer may announce her private result)
            said = " ".join(m["text"] for m in public)
            private_texts = [m["text"] for m in r["messages"] if m["visibility"] != "public" and m["text"] not in said]
            for ex in episode_examples(r):
                allowed = {m["line"] for m in public[:ex.cut]}
                for line in ex.text.split("\n"):
                    if line == "(TARGET has not been mentioned)":
                        continue
                    # unmasking gives back a public line the observer had seen by the cut
                    assert line.replace(TARGET, names[ex.target]) in allowed, (game, line)
                    speaker, _, text = line.partition("] ")[2].partition(": ")
                    assert not (speaker == "Moderator" and REVEAL.search(text)), (game, line)
                for text in private_texts:
                    assert text not in ex.text, (game, text)


def test_a_planted_private_message_never_reaches_the_input(detection_records):
    record = copy.deepcopy(detection_records["spyfall"][0])
    spy = next(s for s in record["roster"] if s["team"] == "spy")
    record["messages"].insert(1, {"index": 99, "step": 1, "round": 1, "phase": "questioning", "sender": spy["agent"],
                                  "text": f"PRIVATE-MARK {spy['name']} is the Spy", "visibility": "private",
                                  "receivers": [spy["agent"]]})
    examples = episode_examples(record)
    assert examples
    assert not any("PRIVATE-MARK" in ex.text or spy["role"] in ex.text for ex in examples)


def test_role_names_of_the_hidden_side_do_not_appear_in_scripted_inputs(detection_records):
    # the scripted players never name their role, so a role word in an input could only have
    # come from a private message or a reveal
    for game in ("spyfall", "undercover", "chameleon"):
        for r in detection_records[game]:
            hidden_role = next(s["role"] for s in r["roster"] if s["team"] in HIDDEN_TEAMS[game])
            assert not any(hidden_role in ex.text for ex in episode_examples(r)), game


def test_split_is_by_episode_as_in_the_exports(detection_log_dir):
    from socialgym_training.export import in_test_split
    examples = load_examples(detection_log_dir)
    train, test = split_episodes(examples, test_fraction=0.34, seed=3)
    train_ids, test_ids = {ex.episode_id for ex in train}, {ex.episode_id for ex in test}
    assert train_ids and test_ids and not train_ids & test_ids
    assert len(train) + len(test) == len(examples)
    assert test_ids == {ex.episode_id for ex in examples if in_test_split(ex.episode_id, 0.34, 3)}
    again, _ = split_episodes(examples, test_fraction=0.34, seed=3)
    assert again == train
    other, _ = split_episodes(examples, test_fraction=0.34, seed=4)
    assert {ex.episode_id for ex in other} != train_ids


def test_statement_labels_with_measurement_on(scripted_records):
    records = scripted_records("triadic_werewolf", [1], measure=True, max_steps=400)
    statements = statement_examples(records[0])
    labelled = [s for s in statements if s["deceptive"] is not None]
    assert labelled
    recorded = {(s["speaker"], s["text"]): s["self_label"] for s in records[0]["metrics"]["statements"]}
    for s in labelled:
        assert s["self_label"] == recorded[(s["speaker"], s["text"])]
        assert s["deceptive"] == int(s["self_label"] != "none")
    roster = {x["agent"]: x["team"] for x in records[0]["roster"]}
    assert all(s["speaker_hidden"] == int(roster[s["speaker"]] == "werewolves") for s in statements)
