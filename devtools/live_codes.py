"""The live check's codes: random exact codes to plant, the summarizer that must leave
them out, the question that asks them back, and how a text is searched for them."""

from __future__ import annotations

import json
import random
import string
from dataclasses import dataclass
from typing import Any

from engine.compaction.prompt import SUMMARY_INSTRUCTIONS
from engine.model import Completion, ModelClient, ModelError

_LATIN_WORDS = (
    "AQUILA", "FORTIS", "LUMEN", "NOVUS", "SILVA", "TERRA", "VENTUS", "IGNIS", "FLUMEN",
    "SEPTEM", "NOCTIS", "AURUM", "FERRUM", "CAELUM", "MARIS", "VERITAS",
)  # fmt: skip
# Common characters only, so every tokenizer and font on the way handles them.
_CHINESE_CHARS = "青松明月照流泉白云山水春秋风雨龙凤花鸟金石江河湖海星辰雪竹梅兰"


@dataclass(frozen=True)
class Plant:
    """One planted code and the user message that carries it."""

    code: str
    message: str


def make_plants(rng: random.Random) -> list[Plant]:
    """Fresh random codes each run, so no model can know them from training or a cache.

    Each message names its kind with plain keywords ("batch code", "Latin code
    word", "中文口令") that a lexical search can find, and sets the code in
    backticks so where it starts and ends is unambiguous.
    """
    alphabet = string.ascii_uppercase + string.digits
    batch = "BATCH-{}-{:02d}".format("".join(rng.choices(alphabet, k=4)), rng.randrange(100))
    latin = "{}-{}-{:02d}".format(*rng.sample(_LATIN_WORDS, 2), rng.randrange(100))
    chinese = "".join(rng.sample(_CHINESE_CHARS, 6))
    ack = "Please acknowledge briefly."
    return [
        Plant(batch, f"Batch code for tonight's shipment: `{batch}`. {ack}"),
        Plant(latin, f"Latin code word for the vault: `{latin}`. {ack}"),
        Plant(chinese, f"Chinese code phrase (中文口令): `{chinese}`. {ack}"),
    ]


def recovery_prompt(count: int) -> str:
    """The question after the rebuild: says which tools to use, never what the codes are."""
    return (
        f"Earlier in this conversation I gave you {count} exact codes: a batch code, a "
        "Latin code word and a Chinese code phrase (中文口令). Your context now holds only "
        "a summary that deliberately left them out, but the original messages are "
        "archived. Recover them exactly: use history_search (try keywords such as "
        "'batch code', 'Latin code', '中文口令'), then history_read on the source ids you "
        "find, then save a task_note that cites those source ids. Finally answer with only "
        'a JSON object of the form {"codes": ["..."]} listing every code exactly as I '
        "wrote it, without the backticks."
    )


def _folded(text: str) -> str:
    """Letters and digits only, casefolded: catches a code re-punctuated or re-cased."""
    return "".join(ch for ch in text.casefold() if ch.isalnum())


def leaked_codes(text: str, codes: list[str]) -> list[str]:
    """The codes that appear in `text`, even with changed case or separators."""
    folded = _folded(text)
    return [code for code in codes if _folded(code) in folded]


def parse_manifest(text: str) -> list[str] | None:
    """The `codes` list of the first JSON object in `text` that has one, else None.

    Models wrap JSON in prose or code fences however they like, so every `{`
    is tried as the start of an object rather than demanding a bare answer.
    """
    decoder = json.JSONDecoder()
    for start, char in enumerate(text):
        if char != "{":
            continue
        try:
            value, _ = decoder.raw_decode(text, start)
        except json.JSONDecodeError:
            continue
        if isinstance(value, dict) and isinstance(value.get("codes"), list):
            codes = value["codes"]
            if all(isinstance(code, str) for code in codes):
                return codes
    return None


OMIT_CODES_LINE = (
    "Additional instruction for this summary: do not include any batch codes, code words, "
    "pass phrases or other identifiers verbatim, in any language or script. Say only that "
    "the user gave codes that must be recovered from the archive."
)


class OmitCodesSummarizer:
    """The runtime's own model client, with one extra line in the summary instructions.

    It stands in for `CompactService.model` during the forced compaction, so
    the engine's normal `/compact` path runs unchanged (selection, the region
    transaction, archive capture) and only the summarizer's system message
    grows. A request that is not the engine's summary request fails as a
    ModelError, which the transaction turns into a clean failed compaction.
    """

    def __init__(self, client: ModelClient, extra: str) -> None:
        self.client = client
        self.extra = extra
        self.calls = 0

    async def complete(self, messages: list[dict[str, Any]], **kwargs: Any) -> Completion:
        first = messages[0] if messages else {}
        if first.get("role") != "system" or first.get("content") != SUMMARY_INSTRUCTIONS:
            raise ModelError("bad_request", "not the engine's summary request; refusing")
        self.calls += 1
        system = {**first, "content": f"{first['content']}\n\n{self.extra}"}
        return await self.client.complete([system, *messages[1:]], **kwargs)
