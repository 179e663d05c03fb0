"""The embedded backend: a GGUF model run in-process by llama-cpp-python."""

from __future__ import annotations

import hashlib
import os
import struct
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from ..config import Settings
from ..errors import BackendUnavailable, BadRequest, ConfigError, ContextWindowExceeded, LLMError
from . import catalogue
from .base import Backend, Capabilities, LLMRequest, LLMResponse, estimate_tokens

GGUF_MAGIC = b"GGUF"
_PER_MESSAGE = 8  # chat-template tokens per message when the template cannot be rendered
_TEMPLATE_ALLOWANCE = 32  # a default system prompt the template may add


def _content_id(path: Path) -> str:
    """A cheap content address: file size plus a hash of the first and last MiB."""
    size = path.stat().st_size
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        digest.update(fh.read(1 << 20))
        fh.seek(max(size - (1 << 20), 0))
        digest.update(fh.read(1 << 20))
    return f"{size}-{digest.hexdigest()[:12]}"


def gguf_identity(path: Path, name: str | None = None) -> str:
    """Which model a GGUF file holds: ``gguf:NAME:DIGEST``, NAME the catalogue name (else the file's stem) and
    DIGEST the weights' content id (:func:`_content_id`), so another file's weights are another model and the same
    weights moved to another folder are the same one."""
    return f"gguf:{name or path.stem}:{_content_id(path)}"


def _trained_context(path: Path) -> int | None:
    """``<arch>.context_length`` from the GGUF header, read without loading the model."""
    sizes = {0: 1, 1: 1, 2: 2, 3: 2, 4: 4, 5: 4, 6: 4, 7: 1, 10: 8, 11: 8, 12: 8}
    ints = {0: "<B", 1: "<b", 2: "<H", 3: "<h", 4: "<I", 5: "<i", 10: "<Q", 11: "<q"}
    try:
        with path.open("rb") as fh:
            def read(fmt: str) -> Any:
                return struct.unpack(fmt, fh.read(struct.calcsize(fmt)))[0]

            def string() -> str:
                return fh.read(read("<Q")).decode("utf-8", "replace")

            def skip(kind: int) -> None:
                if kind == 8:
                    fh.seek(read("<Q"), 1)
                elif kind == 9:
                    item, count = read("<I"), read("<Q")
                    if item in sizes:
                        fh.seek(sizes[item] * count, 1)
                    else:
                        for _ in range(count):
                            skip(item)
                else:
                    fh.seek(sizes[kind], 1)

            if fh.read(4) != GGUF_MAGIC or read("<I") < 2:
                return None
            read("<Q")  # tensor count
            arch = None
            for _ in range(read("<Q")):
                key, kind = string(), read("<I")
                if key == "general.architecture" and kind == 8:
                    arch = string()
                elif arch and key == f"{arch}.context_length" and kind in ints:
                    return int(read(ints[kind]))
                else:
                    skip(kind)
    except (OSError, struct.error, KeyError):
        return None
    return None


def window_for(n_ctx: int, trained: int | None) -> int:
    """The window a model is opened with: ``n_ctx``, at most the trained context (that when ``n_ctx`` <= 0)."""
    return trained or 4096 if n_ctx <= 0 or (trained and n_ctx > trained) else n_ctx


def default_threads() -> int:
    """llama.cpp threads when none are set: the cores this process may run on."""
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return cores or 1


class LlamaCpp(Backend):
    """One GGUF model in this process; calls are serialised (the llama.cpp context is not thread-safe).

    Opening it reads the GGUF header alone (the trained window); the first token count reads the tokenizer
    (llama.cpp's ``vocab_only``: ~100 MB, under a second), which with the chat template is all counting needs. The
    weights are loaded by the first call that goes to the model, so an answer served from the response cache (its
    counts kept beside the replies, :meth:`pagemind.llm.client.LLM.prompt_tokens`) imports and reads nothing."""

    provider = "llama.cpp"

    def __init__(self, path: Path, n_ctx: int = 16384, threads: int | None = None, name: str | None = None,
                 prompt_cache_mb: int = 2048):
        import importlib.util

        if importlib.util.find_spec("llama_cpp") is None:
            raise BackendUnavailable("llama-cpp-python is not installed; run scripts/install.sh")
        self.path = path = Path(path)
        if not path.is_file():
            raise BackendUnavailable(f"no model file at {path}")
        trained = _trained_context(path)
        n_ctx = window_for(n_ctx, trained)
        self.threads = threads or default_threads()
        # Any, not llama_cpp.Llama | None: its create_chat_completion is not overloaded on ``stream`` (a union of
        # a response and an iterator) and its messages are TypedDicts, which would need a cast at every use
        self._llm: Any = None
        self._closed = False
        self.n_ctx = n_ctx  # window_for capped it at the trained context
        self.model_id = gguf_identity(path, name)  # no place in it: also its model_identity
        self.capabilities = Capabilities(
            context_window=self.n_ctx, supports_grammar=True, supports_json_schema=True, max_concurrency=1,
            has_tokenizer=True, token_counts="model", can_stream=True,
            window_source=f"n_ctx setting, at most the trained context ({trained})" if trained else "n_ctx setting",
            constraint="GBNF grammar (llama.cpp in process); JSON schema as a grammar",
            extra={"n_ctx_train": trained, "threads": self.threads},
        )
        self._prompt_cache_bytes = prompt_cache_mb * 1024 * 1024
        self._lock = threading.Lock()
        self._grammars: dict[str, Any] = {}
        self._vocab: Any = None  # the tokenizer alone, read on the first count (a cached answer counts nothing)
        self._formatter: Any = None
        self._vocab_lock = threading.Lock()

    def _lib(self) -> Any:
        """llama-cpp-python, imported on first use (opening the backend imports nothing)."""
        import llama_cpp

        return llama_cpp

    def _tokenizer(self) -> Any:
        """The model's vocabulary (llama.cpp's ``vocab_only``), read on first use with its chat template."""
        with self._vocab_lock:
            if self._closed:
                raise BackendUnavailable("the local model was closed")
            if self._vocab is None:
                from llama_cpp import _internals

                params = self._lib().llama_model_default_params()
                params.vocab_only = True
                try:
                    self._vocab = _internals.LlamaModel(path_model=str(self.path), params=params, verbose=False)
                except (ValueError, RuntimeError) as err:
                    raise BackendUnavailable(f"llama.cpp could not load {self.path.name}: {err}") from None
                self._formatter = self._make_formatter()
            return self._vocab

    @property
    def loaded(self) -> bool:
        """Whether the weights are in memory (a cached answer never loads them)."""
        return self._llm is not None

    def _model(self) -> Any:
        """The model with its weights, loaded on first use (under the call lock)."""
        if self._closed:
            raise BackendUnavailable("the local model was closed")
        if self._llm is None:
            # flash attention, as llama-server's default ("auto") turns it on for the CPU: the small models read
            # prompts faster with it (SmolLM2-135M 131 tokens/s against 98 on 2 cores), the 1.5B as fast
            try:
                self._llm = self._lib().Llama(
                    model_path=str(self.path), n_ctx=self.n_ctx, n_threads=self.threads,
                    n_threads_batch=self.threads, n_batch=512, flash_attn=True, verbose=False,
                )
            except (ValueError, RuntimeError) as err:
                raise BackendUnavailable(f"llama.cpp could not load {self.path.name}: {err}") from None
            if self._prompt_cache_bytes > 0:
                # llama.cpp keeps only the previous prompt's KV cache; this RAM cache keeps the KV states of recent
                # prompts and restores the one with the longest common prefix, so prompts that alternate
                # (ReadAgent's look-up and answer, questions on the same gist memory) skip their shared beginning.
                self._llm.set_cache(_prompt_cache(self._lib(), self._prompt_cache_bytes))
        return self._llm

    def _make_formatter(self) -> Any:
        """The model's own chat template (the one llama-cpp-python applies when it knows no named format for the
        model), or None."""
        from llama_cpp import llama_chat_format

        vocab = self._vocab
        metadata = vocab.metadata()
        template = metadata.get("tokenizer.chat_template")
        if not template or llama_chat_format.guess_chat_format_from_gguf_metadata(metadata) is not None:
            return None

        def text(token: int) -> str:
            return vocab.token_get_text(token) if token != -1 else ""

        return llama_chat_format.Jinja2ChatFormatter(template, eos_token=text(vocab.token_eos()),
                                                     bos_token=text(vocab.token_bos()))

    def count_tokens(self, text: str) -> int:
        if not text:
            return 0
        return len(self._tokenizer().tokenize(text.encode("utf-8"), add_bos=False, special=False))

    def prompt_tokens(self, request: LLMRequest) -> int:
        """Prompt tokens of ``request`` after the chat template (exact when the template renders)."""
        messages = [{"role": m.role, "content": m.content} for m in request.messages]
        vocab = self._tokenizer()
        if self._formatter is not None:
            try:
                prompt = self._formatter(messages=messages).prompt
                return len(vocab.tokenize(prompt.encode("utf-8"), add_bos=False, special=True))
            except Exception:  # a template that fails here fails in llama-cpp-python too; estimate instead
                pass
        body = sum(self.count_tokens(m.content) + _PER_MESSAGE for m in request.messages)
        return body + _TEMPLATE_ALLOWANCE

    def _grammar(self, gbnf: str) -> Any:
        """A parsed grammar, cached by text; BadRequest if llama.cpp cannot parse it."""
        if gbnf not in self._grammars:
            lib = self._lib()
            sampler = lib.llama_sampler_init_grammar(self._tokenizer().vocab, gbnf.encode("utf-8"), b"root")
            if not sampler:  # a NULL sampler would crash the process later
                raise BadRequest("llama.cpp rejected the GBNF grammar (syntax error or no 'root' rule)")
            lib.llama_sampler_free(sampler)
            self._grammars[gbnf] = lib.LlamaGrammar.from_string(gbnf, verbose=False)
        return self._grammars[gbnf]

    def execute(self, request: LLMRequest) -> LLMResponse:
        kwargs: dict[str, Any] = {}
        constraint = request.constraint
        with self._lock:
            if constraint is not None and constraint.gbnf:
                kwargs["grammar"] = self._grammar(constraint.gbnf)
            elif constraint is not None and constraint.json_schema:
                kwargs["response_format"] = {"type": "json_object", "schema": constraint.json_schema}
            prompt = self._fitting_prompt(request)  # refused before the weights are even loaded
            llm = self._model()
            start = time.perf_counter()
            with self._errors():
                out = llm.create_chat_completion(
                    messages=[{"role": m.role, "content": m.content} for m in request.messages],
                    max_tokens=request.max_tokens, temperature=request.temperature,
                    stop=list(request.stop) or None, seed=request.seed, **kwargs,
                )
            seconds = time.perf_counter() - start
        choice = out["choices"][0]
        usage = out.get("usage") or {}
        text = choice["message"].get("content") or ""
        return LLMResponse(
            text=text, prompt_tokens=int(usage.get("prompt_tokens", prompt)),
            completion_tokens=int(usage.get("completion_tokens", estimate_tokens(text))), seconds=seconds,
            model=self.model_id, finish_reason=choice.get("finish_reason") or "stop",
            constrained=bool(kwargs),
        )

    def stream(self, request: LLMRequest, on_text: Callable[[str], None]) -> LLMResponse:
        """The reply token by token (llama.cpp's streamed chat completion); constrained requests in one piece."""
        if request.constraint is not None or request.tools:
            return super().stream(request, on_text)
        with self._lock:
            prompt = self._fitting_prompt(request)
            llm = self._model()
            start = time.perf_counter()
            pieces: list[str] = []
            finish = "stop"
            with self._errors():
                for chunk in llm.create_chat_completion(
                        messages=[{"role": m.role, "content": m.content} for m in request.messages],
                        max_tokens=request.max_tokens, temperature=request.temperature,
                        stop=list(request.stop) or None, seed=request.seed, stream=True):
                    choice = chunk["choices"][0]
                    piece = (choice.get("delta") or {}).get("content") or ""
                    if piece:
                        pieces.append(piece)
                        on_text(piece)
                    finish = choice.get("finish_reason") or finish
            seconds = time.perf_counter() - start
        text = "".join(pieces)
        return LLMResponse(text=text, prompt_tokens=prompt, completion_tokens=self.count_tokens(text),
                           seconds=seconds, model=self.model_id, finish_reason=finish)

    def _fitting_prompt(self, request: LLMRequest) -> int:
        """The request's prompt tokens; a prompt that leaves no room for its reply is refused before llama.cpp."""
        prompt = self.prompt_tokens(request)
        if prompt + request.max_tokens > self.n_ctx:
            raise ContextWindowExceeded(
                f"prompt of {prompt} tokens + {request.max_tokens} reply tokens exceeds the context window "
                f"of {self.n_ctx} tokens ({self.model_id})", prompt_tokens=prompt, context_window=self.n_ctx)
        return prompt

    @contextmanager
    def _errors(self) -> Iterator[None]:
        """llama.cpp's failures as pagemind's typed errors."""
        try:
            yield
        except ValueError as err:
            if "context window" in str(err):
                raise ContextWindowExceeded(str(err), context_window=self.n_ctx) from None
            raise LLMError(f"llama.cpp failed: {err}") from None
        except RuntimeError as err:
            raise LLMError(f"llama.cpp failed: {err}") from None

    def forget_prompts(self) -> None:
        """Drop every cached prompt state (the RAM cache and the current KV cache): the next call starts cold.
        For measurements that must not profit from an earlier run's prompts."""
        with self._lock:
            if self._llm is not None:
                self._llm.reset()
                if self._prompt_cache_bytes > 0:
                    self._llm.set_cache(_prompt_cache(self._lib(), self._prompt_cache_bytes))

    def close(self) -> None:
        with self._lock:
            self._closed = True
            if self._llm is not None:
                self._llm.close()
                self._llm = None
            with self._vocab_lock:
                if self._vocab is not None:
                    self._vocab.close()
                    self._vocab = None


def _prompt_cache(llama_cpp: Any, capacity: int) -> Any:
    """llama-cpp-python's RAM cache, without the logits copy each saved state carries, and counting what it keeps.

    A state holds the KV cache of its prompt (~30 KB a token for a 1.5B model) and a copy of the logits buffer
    (n_batch x vocabulary floats: ~300 MB for a 150k-token vocabulary). Sampling no longer reads those logits (only
    logprobs with ``logits_all`` do, which pagemind never asks) and a restored state is decoded again from its last
    token, so one row is kept (load_state broadcasts it): 512 MB then holds a dozen prompts instead of one — an
    agent's step after a summary finds its system prompt again."""

    class PromptCache(llama_cpp.LlamaRAMCache):
        def __setitem__(self, key: Any, state: Any) -> None:
            if state.scores.shape[0] > 1:
                state.scores = state.scores[-1:].copy()
            super().__setitem__(key, state)

        @property
        def cache_size(self) -> int:
            return sum(s.llama_state_size + s.scores.nbytes + s.input_ids.nbytes for s in self.cache_state.values())

    return PromptCache(capacity_bytes=capacity)


def model_file(spec_or_path: str) -> tuple[Path, str | None]:
    """The GGUF file of ``local:NAME`` (a catalogue model) or ``gguf:PATH`` (any GGUF file), and its catalogue name."""
    kind, _, value = spec_or_path.partition(":")
    if kind == "local" and value:
        return catalogue.model_path(value), catalogue.get_spec(value).name
    if kind == "gguf" and value:
        path = Path(value).expanduser()
        if not path.is_file():
            raise ConfigError(f"gguf model file not found: {value}")
        with path.open("rb") as fh:
            if fh.read(4) != GGUF_MAGIC:
                raise ConfigError(f"{value} is not a GGUF model file (wrong magic bytes)")
        return path, None
    raise ConfigError(f"expected local:NAME or gguf:PATH, got {spec_or_path!r}")


def open_local(spec_or_path: str, settings: Settings) -> LlamaCpp:
    """Open ``local:NAME`` or ``gguf:PATH`` in this process with the settings' n_ctx/threads (``--llm`` specs go
    through :func:`pagemind.llm.managed.open_embedded`, which picks the shared server or this)."""
    path, name = model_file(spec_or_path)
    return LlamaCpp(path, n_ctx=settings.n_ctx, threads=settings.threads, name=name,
                    prompt_cache_mb=settings.prompt_cache_mb)
