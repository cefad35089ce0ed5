"""The BERT encoder on the real all-MiniLM-L6-v2 against sentence-transformers (and transformers'
BertModel with the pooling written out): cosine >= 0.9999 on a corpus of English, Chinese, code
and mixed text, whether each input runs alone or padded in a batch with longer ones."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from mcp.engine.engine import NativeEngine
from mcp.engine.pooling import pool
from mcp.modelfile.reader import open_model

CORPUS = [
    "The capital of France is Paris.",
    "A man is playing a guitar on the street.",
    "今天天气很好，我们去公园散步吧。",
    "北京是中华人民共和国的首都，也是全国的政治和文化中心。",
    "def fibonacci(n):\n    return n if n < 2 else fibonacci(n - 1) + fibonacci(n - 2)",
    "SELECT name, COUNT(*) FROM users WHERE age > 30 GROUP BY name ORDER BY 2 DESC;",
    "for (int i = 0; i < n; ++i) { sum += a[i] * b[i]; }",
    "Mixed 中文 and English with code: `np.linalg.norm(x)` → 1.0",
    "x",
    " ".join(["Embeddings turn text into vectors that capture meaning."] * 20),  # ~200 tokens
]


@pytest.fixture(scope="module")
def engine(minilm_mcp):
    return NativeEngine(open_model(minilm_mcp))


def embed(engine: NativeEngine, texts: list[str]) -> torch.Tensor:
    """The engine's embeddings of ``texts`` as one right-padded batch."""
    ids = [engine.tokenizer.encode(t) for t in texts]
    length = max(map(len, ids))
    batch = torch.zeros(len(ids), length, dtype=torch.long)
    for row, row_ids in enumerate(ids):
        batch[row, :len(row_ids)] = torch.tensor(row_ids)
    lengths = torch.tensor([len(i) for i in ids])
    mask = torch.arange(length)[None, :] < lengths[:, None]
    with torch.inference_mode():
        return pool(engine.model(batch, mask), lengths, engine.header.architecture.pooling)


def test_header_says_mean_pooling_normalized_up_to_256_tokens(engine):
    arch = engine.header.architecture
    assert (arch.architecture, arch.hidden_size, arch.num_layers) == ("bert", 384, 6)
    assert (arch.pooling.mode, arch.pooling.normalize, arch.pooling.max_tokens) == ("mean", True, 256)
    assert engine.max_context == 256 and engine.is_encoder


def test_tokens_equal_the_folder_tokenizer(engine, minilm_folder):
    from transformers import AutoTokenizer

    reference = AutoTokenizer.from_pretrained(str(minilm_folder))
    assert [engine.tokenizer.encode(t) for t in CORPUS] == reference(CORPUS)["input_ids"]


def test_cosine_with_sentence_transformers(engine, minilm_folder):
    st = pytest.importorskip("sentence_transformers", reason="pip install sentence-transformers (the test extra)")
    reference = torch.from_numpy(st.SentenceTransformer(str(minilm_folder), device="cpu").encode(CORPUS))
    ours = embed(engine, CORPUS)
    cosine = F.cosine_similarity(ours, reference)
    assert cosine.min().item() >= 0.9999, cosine.tolist()
    assert torch.allclose(ours.norm(dim=-1), torch.ones(len(CORPUS)), atol=1e-5)


def test_cosine_with_transformers_bert_and_the_pooling_by_hand(engine, minilm_folder):
    from transformers import AutoTokenizer, BertModel

    tokenizer = AutoTokenizer.from_pretrained(str(minilm_folder))
    model = BertModel.from_pretrained(str(minilm_folder), torch_dtype=torch.float32).eval()
    batch = tokenizer(CORPUS, padding=True, truncation=True, max_length=256, return_tensors="pt")
    with torch.inference_mode():
        hidden = model(**batch).last_hidden_state
    mask = batch["attention_mask"][..., None].float()
    reference = F.normalize((hidden * mask).sum(1) / mask.sum(1), dim=-1)
    cosine = F.cosine_similarity(embed(engine, CORPUS), reference)
    assert cosine.min().item() >= 0.9999, cosine.tolist()


def test_padding_in_a_batch_changes_no_embedding(engine):
    together = embed(engine, CORPUS)
    alone = torch.cat([embed(engine, [text]) for text in CORPUS])
    assert F.cosine_similarity(together, alone).min().item() >= 0.99999


def test_cls_and_last_pooling_pick_their_token():
    from mcp.modelfile.spec import Pooling

    hidden = torch.arange(2 * 3 * 2, dtype=torch.float32).view(2, 3, 2)  # [B=2, T=3, H=2]
    lengths = torch.tensor([3, 2])
    assert pool(hidden, lengths, Pooling("cls", False, 8)).tolist() == [[0, 1], [6, 7]]
    assert pool(hidden, lengths, Pooling("last", False, 8)).tolist() == [[4, 5], [8, 9]]
    assert pool(hidden, lengths, Pooling("mean", False, 8)).tolist() == [[2, 3], [7, 8]]
