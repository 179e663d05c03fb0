"""Navigation (paper §3): triage from the root, read a leaf, answer (-2) or revert (-1), with working memory.

State: a stack of (node, excluded child numbers). A leaf's -1 pops it and excludes it at its parent; a node
whose children are all excluded reverts further up; an exhausted root, ``max_failures`` consecutive invalid
replies or a spent step budget end the search with "no answer", recorded, never raised.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from ...answering.evidence import Evidence
from ...answering.finish import Context, Reading
from ...answering.question import Question
from ...llm.base import LLMRequest
from ...llm.client import LLM
from ...llm.decide import Invalid, decide
from .memory import ROOT, MemoryTree, MemWalkerOptions, TreeNode
from .parsing import LeafReply, Triage, parse_leaf, parse_triage
from .requests import flat, leaf_request, retry_request, triage_request
from .segment import cut_to_tokens
from .trajectory import BUDGET, EXHAUSTED, FAILED, LEAF, TRIAGE, NavigationStep, format_walk, stats

NO_ANSWER = "no answer"
_FORCED = "every other part of the text was rejected already: answer from this part (Action: -2)"
_BACKGROUND_OVERHEAD = 16  # "Story background information: " and its line break, with margin


def number(node_id: str) -> int:
    """A node's child number under its parent (``2.1`` -> 1)."""
    return int(node_id.rsplit(".", 1)[-1])


def working_memory(tree: MemoryTree, leaf: TreeNode) -> list[str]:
    """Summaries of the nodes on the path from the root to the leaf's parent, oldest first. An uncompressed
    parent's content repeats its chosen child's summary: the repeat is taken out of the older item, so the
    text appears once and truncation from the oldest drops the other children's summaries first."""
    items: list[str] = []
    for node in tree.path(leaf.id)[:-1]:
        text = flat(node.summary)
        if not text:
            continue
        padded = f" {text} "
        items = [" ".join(f" {item} ".replace(padded, " ").split()) for item in items]
        items = [item for item in items if item]
        items.append(text)
    return items


def fit_memory(items: list[str], budget: int, count: Callable[[str], int]) -> tuple[str, bool]:
    """The working memory within ``budget`` tokens, truncated from the oldest: (text, truncated)."""
    kept = list(items)
    text = " ".join(kept)
    truncated = False
    while kept and count(text) > budget:
        truncated = True
        if len(kept) > 1:
            kept.pop(0)
            text = " ".join(kept)
        else:
            text = cut_to_tokens(text, max(0, budget), count, keep="tail")
            break
    return text, truncated


class Walk:
    """One question's navigation over a tree."""

    def __init__(self, tree: MemoryTree, question: Question, llm: LLM, opts: MemWalkerOptions, context: Context,
                 leaf_scores: Callable[[], Sequence[float]] | None = None):
        """``leaf_scores``: the question's score of each leaf (in ``tree.leaves`` order), asked once where the walk
        is guided (the reader's ranking of its passages)."""
        self.tree, self.question, self.llm, self.opts = tree, question, llm, opts
        self.leaf_scores = leaf_scores
        self.trace = context.trace
        self.steps: list[NavigationStep] = []
        self.fallbacks = context.fallbacks
        self.calls = self.invalid = 0
        self.leaves_read: list[TreeNode] = []
        self.seen: set[str] = set()  # nodes whose summary was placed in a prompt
        self.context_words = 0
        self.memory_truncated = 0
        self.best_leaf = False  # the answer came from on_exhausted=best-leaf
        self._scores: list[float] | None = None  # each leaf's score, asked once (guided walks)
        self._rejected: set[str] = set()  # leaves read and rejected

    # --- asking, with re-asks ----------------------------------------------------------------------
    def _reserved(self) -> int:
        """Navigation calls kept back for the best-leaf answer once a leaf was read: the leaf's rejection continued
        with why it must answer now, and one re-ask."""
        return 2 if self.opts.on_exhausted == "best-leaf" and self.leaves_read else 0

    def _ask(self, request: LLMRequest, parse: Callable[[str], Any],
             retry: Callable[[LLMRequest, str, str], LLMRequest],
             describe: Callable[[Any], str], reserve: int = 0) -> tuple[Any, int, int, str]:
        """(valid reply or None, calls, invalid replies, outcome: ok | failed | budget); ``reserve``: calls of the
        budget this decision may not use."""

        def typed(reply: str) -> Any:
            parsed = parse(reply)
            return Invalid(parsed.problem) if parsed.problem else parsed

        found = decide(self.llm, request, typed, self.trace, retries=self.opts.max_failures - 1, retry=retry,
                       describe=describe,
                       may_call=lambda made: self.calls + made < self.opts.max_steps - reserve)
        self.calls += found.calls
        self.invalid += len(found.problems)
        return found.value, found.calls, len(found.problems), found.outcome  # ok | failed | budget

    def guided(self, node: TreeNode, allowed: list[int]) -> list[int]:
        """``allowed`` children ranked by the score of the best segment beneath each (ties in reading order), the
        first ``guide_k``: what a guided triage shows."""
        guide = self._node_scores()
        ranked = sorted(allowed, key=lambda i: -guide.get(node.children[i], 0.0))
        return ranked[:self.opts.guide_k]

    def _unread(self) -> list[tuple[TreeNode, float]]:
        """The leaves not read and rejected, with their scores (in reading order)."""
        if self._scores is None:
            assert self.leaf_scores is not None, "a guided walk is given its reader's leaf scores"
            self._scores = [float(s) for s in self.leaf_scores()]
        return [(leaf, score) for leaf, score in zip(self.tree.leaves, self._scores) if leaf.id not in self._rejected]

    def _node_scores(self) -> dict[str, float]:
        """Node id -> the score of its best unread segment: a child ranks as the best it still has to offer."""
        best: dict[str, float] = {}
        for leaf, score in self._unread():
            parts = leaf.id.split(".")
            for depth in range(1, len(parts) + 1):
                key = ".".join(parts[:depth])
                best[key] = max(best.get(key, 0.0), score)
        return best

    def _climb(self, stack: list[tuple[TreeNode, set[int]]]) -> None:
        """``revert=best``: after a rejected leaf, back up the path to the lowest node above the best unread leaf
        (ties in reading order), so the walk goes on where the ranking is best, not in the rejected leaf's section.
        Nodes left are not rejected: their children's rejections are kept (``_excluded``) for a walk back."""
        unread = self._unread()
        if not unread:
            return
        target = max(unread, key=lambda pair: pair[1])[0].id  # (max keeps the first of equal scores)
        while len(stack) > 1 and not target.startswith(stack[-1][0].id + "."):
            stack.pop()

    def _triage(self, node: TreeNode, excluded: set[int]) -> tuple[int | None, NavigationStep]:
        allowed = [i for i in range(len(node.children)) if i not in excluded]
        hidden: frozenset[int] = frozenset()
        if self.opts.guide != "none":
            shown_now = self.guided(node, allowed)
            hidden = frozenset(allowed) - frozenset(shown_now)  # not on offer this time
            allowed = shown_now
        if len(allowed) == 1:  # the only valid action: a grammar would force it, a parser accept nothing else
            return allowed[0], NavigationStep(node.id, TRIAGE, allowed[0], "(the only child left; no call needed)")
        children = self.tree.children(node)
        shown = [(i, children[i].summary) for i in allowed]
        request = triage_request(self.question, shown, self.opts)
        budget = self.opts.budget
        if budget is not None and sum(self.llm.count_tokens(s) for _, s in shown) > budget:
            share = max(1, budget // len(shown))
            self.fallbacks.append(f"triage summaries cut to {share} tokens each to fit the budget")
            shown = [(i, cut_to_tokens(s, share, self.llm.count_tokens)) for i, s in shown]
            request = triage_request(self.question, shown, self.opts)
        if not self.llm.fits(request):
            request = self._shrink_triage(shown)
        self.seen.update(children[i].id for i in allowed)
        self.context_words = max(self.context_words, sum(len(s.split()) for _, s in shown))
        parsed, calls, invalid, outcome = self._ask(
            request,
            lambda reply: parse_triage(reply, len(node.children), frozenset(excluded), hidden),
            lambda req, reply, problem: retry_request(req, reply, problem, choices=allowed),
            lambda t: f"-> child {t.child}", self._reserved(),
        )
        if parsed is None:
            return None, NavigationStep(node.id, outcome, None, "", calls=calls, invalid=invalid)
        triage: Triage = parsed
        return triage.child, NavigationStep(node.id, TRIAGE, triage.child, triage.reasoning, calls=calls,
                                            invalid=invalid)

    def _shrink_triage(self, shown: list[tuple[int, str]]) -> LLMRequest:
        """Cut every summary to an equal share of the room left (summaries longer than the node limit)."""
        empty = triage_request(self.question, [(i, "") for i, _ in shown], self.opts)
        room = self.llm.context_window - self.llm.prompt_tokens(empty) - empty.max_tokens
        share = max(1, room // max(1, len(shown)) - 2)
        self.fallbacks.append(f"triage summaries cut to {share} tokens each to fit the context window")
        return triage_request(self.question, [(i, cut_to_tokens(s, share, self.llm.count_tokens)) for i, s in shown],
                              self.opts)

    def _leaf(self, leaf: TreeNode, forced: bool = False) -> tuple[LeafReply | None, NavigationStep]:
        """Read a leaf: answer (-2) or revert (-1); ``forced``: answer only (the exhausted root's best leaf)."""
        memory = ""
        if self.opts.working_memory:
            items = working_memory(self.tree, leaf)
            base = leaf_request(self.question, leaf.text, "", self.opts)
            room = self.llm.context_window - self.llm.prompt_tokens(base) - base.max_tokens - _BACKGROUND_OVERHEAD
            limit = min(self.opts.memory_tokens, room)
            if self.opts.budget is not None:
                limit = min(limit, self.opts.budget - self.llm.count_tokens(leaf.text))
            memory, truncated = fit_memory(items, limit, self.llm.count_tokens)
            self.memory_truncated += truncated
            self.seen.update(n.id for n in self.tree.path(leaf.id)[:-1])
        request = leaf_request(self.question, leaf.text, memory, self.opts, forced=forced)
        reserve = 0 if forced else self._reserved()  # (before this leaf counts as read: the first keeps every call)
        earlier = next((s for s in self.steps if s.node == leaf.id and s.kind == LEAF and s.action == -1), None)
        if forced and earlier is not None:  # its rejection, and why it must answer now: a new request, never the
            request = retry_request(request, f"Reasoning: {earlier.reasoning}\nAction: -1", _FORCED,  # cached "-1"
                                    question=self.question)
        if not forced:
            self.leaves_read.append(leaf)
        self.context_words = max(self.context_words, len(leaf.text.split()) + len(memory.split()))
        letters = self.question.letters

        def describe(r: LeafReply) -> str:
            if r.action == -1:
                return "-1 (revert)"
            return f"-2, answer {letters[r.choice] if r.choice is not None else r.answer[:40]}"

        def parse(reply: str) -> LeafReply:
            read = parse_leaf(reply, self.question)
            if forced and read.action == -1:
                return LeafReply(None, read.reasoning, problem=_FORCED)
            return read

        parsed, calls, invalid, outcome = self._ask(
            request, parse,
            lambda req, reply, problem: retry_request(req, reply, problem, question=self.question), describe,
            reserve,
        )
        if parsed is None:
            return None, NavigationStep(leaf.id, outcome, None, "", calls=calls, invalid=invalid)
        answer = "" if parsed.action == -1 else (letters[parsed.choice] if parsed.choice is not None else parsed.answer)
        return parsed, NavigationStep(leaf.id, LEAF, parsed.action, parsed.reasoning, answer, calls, invalid)

    # --- the state machine -------------------------------------------------------------------------
    def run(self) -> LeafReply | None:
        """Walk until an answer (returned) or a recorded end without one (None)."""
        excluded_at: dict[str, set[int]] = {}  # a node's rejected children, kept when a climb leaves it
        stack: list[tuple[TreeNode, set[int]]] = [(self.tree.root, excluded_at.setdefault(ROOT, set()))]
        while True:
            node, excluded = stack[-1]
            if self._reserved() and self.calls >= self.opts.max_steps - self._reserved():
                return self._spent(node.id)
            if node.is_leaf:
                had = self._reserved()  # (this leaf, once read, makes room for a best-leaf answer)
                reply, step = self._leaf(node)
                self.steps.append(step)
                if reply is None:
                    if step.kind == BUDGET and had:
                        return self._spent(node.id)
                    self.fallbacks.append(self._failure_note(step))
                    return None
                if reply.action == -2:
                    return reply
                stack.pop()
                if not stack:
                    self.steps.append(NavigationStep(ROOT, EXHAUSTED, -1, "the only segment cannot answer"))
                    return self._exhausted("the text's only segment was rejected")
                stack[-1][1].add(number(node.id))
                self._rejected.add(node.id)
                if self.opts.revert == "best":
                    self._climb(stack)
                continue
            if len(excluded) == len(node.children):
                self.steps.append(NavigationStep(node.id, EXHAUSTED, -1, "every child was read and rejected"))
                stack.pop()
                if not stack:
                    return self._exhausted("every path from the root was rejected")
                stack[-1][1].add(number(node.id))
                continue
            child, step = self._triage(node, excluded)
            self.steps.append(step)
            if child is None:
                if step.kind == BUDGET and self._reserved():
                    return self._spent(node.id)
                self.fallbacks.append(self._failure_note(step))
                return None
            chosen = self.tree.node(node.children[child])
            stack.append((chosen, excluded_at.setdefault(chosen.id, set())))

    def _spent(self, node_id: str) -> LeafReply | None:
        """The step budget is spent but for the calls kept back: the best-leaf answer."""
        return self._exhausted(f"the step budget of {self.opts.max_steps} navigation calls was all but used up at "
                               f"node {node_id}")

    def _exhausted(self, why: str) -> LeafReply | None:
        """The root is exhausted: no answer (the paper), or with ``on_exhausted=best-leaf`` an answer from the
        first leaf the walk read, the one triage rated most promising at every level (recorded as a fallback)."""
        if self.opts.on_exhausted == "no-answer" or not self.leaves_read:
            self.fallbacks.append(f"no answer: {why}")
            return None
        best = self.leaves_read[0]
        reply, step = self._leaf(best, forced=True)
        self.steps.append(step)
        if reply is None:
            self.fallbacks.append(f"no answer: {why}, and the forced answer from leaf {best.id} failed "
                                  f"({self._failure_note(step)})")
            return None
        self.fallbacks.append(f"{why}; answered from leaf {best.id}, the walk's first choice (on_exhausted=best-leaf)")
        self.best_leaf = True
        return reply

    def _failure_note(self, step: NavigationStep) -> str:
        if step.kind == BUDGET:
            return (f"no answer: the step budget of {self.opts.max_steps} navigation calls was used up at node "
                    f"{step.node}")
        return f"no answer: {step.invalid} consecutive invalid replies at node {step.node}"

    def reading(self) -> Reading:
        reply = self.run()
        steps = [s.as_dict() for s in self.steps]
        doc_tokens = max(1, self.tree.document_tokens)
        read_tokens = sum(n.tokens for n in {n.id: n for n in self.leaves_read}.values())
        node_tokens = sum(self.tree.node(i).summary_tokens for i in self.seen)
        failure = None if reply is not None else self.steps[-1].kind if self.steps else FAILED
        exhausted = any(s.kind == EXHAUSTED and s.node == ROOT for s in self.steps)
        details = {
            "trajectory": steps,
            "walk": format_walk(steps),
            "leaves_read": [n.id for n in self.leaves_read],
            "fraction_read": round(read_tokens / doc_tokens, 4),
            "fraction_read_with_nodes": round((read_tokens + node_tokens) / doc_tokens, 4),
            **stats(self.steps, self.calls, self.invalid),
            "navigation_failure": failure,
            "root_exhausted": exhausted,
            "answered_after_exhaustion": exhausted and reply is not None,
            "answered_from_best_leaf": self.best_leaf,  # after exhaustion, or with the step budget all but spent
            "memory_truncated": self.memory_truncated,
            "tree": {"depth": self.tree.depth, "nodes": len(self.tree.nodes), "leaves": len(self.tree.leaves)},
        }
        if reply is None:
            text, choice = NO_ANSWER, None
        elif reply.choice is not None:
            text, choice = self.question.options[reply.choice], reply.choice
        else:
            text, choice = reply.answer, None
        answered = [self.tree.node(s.node) for s in self.steps if s.kind == LEAF and s.action == -2]
        if reply is not None and answered:  # the leaf that answered, cited; the path to it is in the details
            details["answer_path"] = [n.id for n in self.tree.path(answered[-1].id)]
        evidence = [Evidence("leaf", n.index, n.text, "leaf", head=n.head)
                    for n in answered[-1:]] if reply is not None else []
        return Reading(text, choice, [n.index for n in self.leaves_read], self.context_words,
                       self.tree.document_words, details, evidence)
