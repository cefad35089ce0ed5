"""What one benchmark run measures: the settings, the prompts, and the spec a worker gets.

The prompts are built once in the parent process (with our tokenizer, which tokenizes this
model exactly as llama.cpp and transformers do) and handed to every engine as text, so all
three engines see the same prompts; each worker reports the token counts it saw.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field

CHAT_MESSAGES = ({"role": "user", "content": "Explain quantum entanglement in simple terms."},)

# The prompt-processing text: written for this benchmark, repeated as needed, cut at a word.
PASSAGE = (
    "The lighthouse on the northern cape was built in the winter of a hard year, when the "
    "harbour had lost three boats to the rocks in as many months. The keeper who first lit "
    "its lamp kept a log of every night, and the log survives: the wind, the sea, the ships "
    "that passed, the oil burned and the wicks trimmed. Reading it now, one learns less about "
    "the sea than about patience. Each entry has the same shape. A line for the weather, a "
    "line for the light, a line for anything that went wrong, and very often nothing went "
    "wrong at all. When the railway reached the town, the keeper's son wrote that the trains "
    "brought coal cheaper than the boats ever had, and that the lamp could now burn brighter "
    "on the longest nights. Later the lamp was replaced by an electric one, and the clockwork "
    "that turned the lens by a motor, and the keeper's house by a small concrete hut with a "
    "radio in it. The log goes on through all of it. Engineers came to measure how far the "
    "beam could be seen in fog, and found that the old figure painted on the tower was too "
    "generous by almost a mile. Fishermen complained about the new foghorn, which was louder "
    "than the old bell but, they said, harder to place in the dark. A storm in the spring "
    "tore the copper roof from the lantern room, and for six weeks the light shone through a "
    "tarpaulin stitched to the frame. Children from the school walked up the hill each summer "
    "and counted the steps, which were one hundred and twelve, though every class insisted it "
    "had found one more or one fewer. The last keeper left when the light was automated, and "
    "his final entry is as plain as the first: wind from the west, sea moderate, light "
    "burning, all well. "
)

DECODE_PROMPTS = (
    "The capital of France is", "Once upon a time, in a small village,",
    "The best way to learn a new language is", "In the year 2050, cities will",
    "My favourite recipe for bread starts with", "The three laws of motion say that",
    "A good night's sleep matters because", "The ocean is deep and full of",
    "To build a wooden table you need", "The history of the printing press began",
    "When the rain stopped, the children", "Photosynthesis is the process by which",
    "The old map showed a path through", "Here is a short poem about the moon:",
    "The train left the station at dawn and", "A computer's memory works by",
    "The mountain guide told us to", "Bees communicate with each other by",
    "The recipe calls for two cups of", "In chess, the opening moves are",
    "The museum's newest exhibit features", "Volcanoes form when",
    "The letter began with the words", "Learning to ride a bicycle means",
    "The forest at night is full of", "A healthy breakfast includes",
    "The scientist looked at the results and", "Rivers shape the land by",
    "The festival in the square started with", "Good software is easy to",
    "The desert caravan travelled for days until", "The robot opened its eyes and",
)


@dataclass(frozen=True)
class Settings:
    """How much to measure: ``full`` is the documented run, ``quick`` a smoke run."""

    runs: int
    prompt_tokens: int  # the prompt-processing prompt, about this many tokens
    decode_tokens: int  # batch-1 decode length
    batch_sizes: tuple[int, ...]
    batch_tokens: int  # tokens generated per sequence in the batched runs
    bandwidth_mib: int

    @classmethod
    def full(cls) -> Settings:
        return cls(runs=5, prompt_tokens=500, decode_tokens=128, batch_sizes=(8, 32),
                   batch_tokens=128, bandwidth_mib=1024)

    @classmethod
    def quick(cls) -> Settings:
        return cls(runs=2, prompt_tokens=128, decode_tokens=32, batch_sizes=(8, 32),
                   batch_tokens=8, bandwidth_mib=256)


@dataclass(frozen=True)
class WorkerSpec:
    """Everything a worker subprocess needs, passed as JSON."""

    engine: str  # ours | llamacpp | transformers | bandwidth
    mcp_path: str
    gguf_path: str
    threads: int
    settings: Settings
    pp_text: str = ""
    chat_text: str = ""  # CHAT_MESSAGES rendered by the model's chat template
    cold_only: bool = False  # measure one cold load and exit
    options: dict = field(default_factory=dict)  # engine-specific switches

    def to_json(self) -> str:
        return json.dumps(asdict(self))

    @classmethod
    def from_json(cls, text: str) -> WorkerSpec:
        data = json.loads(text)
        settings = data.pop("settings")
        settings["batch_sizes"] = tuple(settings["batch_sizes"])
        return cls(settings=Settings(**settings), **data)


def numbered_words(count: int) -> str:
    """``count`` words of raw text, "word0 word1 ...": a long prompt of a known size (about
    3.8 tokens a word with SmolLM2's tokenizer: 600 words are 2,290 tokens)."""
    return " ".join(f"word{i}" for i in range(count))


def build_prompts(tokenizer, prompt_tokens: int) -> tuple[str, str]:
    """(prompt-processing text of at most ``prompt_tokens`` tokens, rendered chat prompt)."""
    words = (PASSAGE * (1 + prompt_tokens // 300)).split(" ")
    low, high = 1, len(words)
    while low < high:  # the most words whose tokens fit
        middle = (low + high + 1) // 2
        if len(tokenizer.encode(" ".join(words[:middle]))) <= prompt_tokens:
            low = middle
        else:
            high = middle - 1
    chat_text = tokenizer.apply_chat_template(list(CHAT_MESSAGES), add_generation_prompt=True)
    return " ".join(words[:low]), chat_text
