"""Support, the verifier and abstention on the embedded tiny model (issue 38), end to end: the README's two questions
of the short sample (its paragraphs about Mr. Pellow), answered by SmolLM2-135M through ``pagemind ask``'s path with
``verify`` on. The tiny model's answers are not to be trusted; what is checked is that pagemind judges whatever it
says consistently: the verifier's call is made under its grammar and read into one label (no log-probabilities in
process: the label alone, said so), an unsupported draft is replaced by "The document does not say" and kept, and a
supported one stands."""

from pagemind.answering.support import LABELS
from pagemind.cli.main import sample_path


def test_the_samples_two_questions_are_judged_and_the_unsupported_one_withdrawn(tiny_model):
    paragraphs = sample_path().read_text(encoding="utf-8").split("\n\n")
    story = tiny_model.read("\n\n".join(p for p in paragraphs if "Pellow" in p)[:2500], "pellow.txt")  # short calls
    for question in ("What colour was the inspector's coat?", "How old is Mr. Pellow?"):
        answer = tiny_model.ask(story, question, method="full", verify=True)
        roles = [e.role for e in answer.trace.events]
        assert roles[-1] == "verify" and roles.count("answer") == 1, roles
        support, verdict = answer.support, answer.support.verdict
        assert verdict is not None and verdict.label in LABELS and verdict.basis == "label"  # no logprobs here
        assert verdict.tokens > 0 and verdict.confidence is None
        assert answer.abstained == (support.declined or support.label == "unsupported")
        if answer.abstained:
            assert answer.text.startswith("The document does not say") and answer.draft
            assert answer.draft not in answer.text or support.declined
        else:
            assert answer.draft is None and answer.text and support.label in ("supported", "partial")
        verify_tokens = sum(e.prompt_tokens for e in answer.trace.events if e.role == "verify")
        answer_tokens = sum(e.prompt_tokens for e in answer.trace.events if e.role == "answer")
        quoted = sum(tiny_model.llm.count_tokens(c.quote) for c in answer.citations)
        assert verify_tokens <= quoted + 160 < answer_tokens  # the cited sentences and a short prompt: not the story
