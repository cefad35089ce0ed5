"""The in-process bench's Session config: --config, --policy, and the SLO targets it scores by."""

from __future__ import annotations

import pytest

from mcp.base.errors import ConfigError
from mcp.ops.loadgen.mix import SLOTable
from mcp.ops.loadgen.session_config import session_config, session_slo_table


def test_a_config_file_is_read_relative_to_its_folder(tmp_path):
    (tmp_path / "mcp-config.yaml").write_text("runtime:\n  model_dir: models\ngeneration:\n  max_tokens: 7\n")
    config = session_config(tmp_path / "mcp-config.yaml", None)
    assert config.model_dir == (tmp_path / "models").resolve() and config.generation.max_tokens == 7


@pytest.mark.parametrize(
    ("text", "message"),
    [("runtime: [1", "cannot be read as YAML"), ("- a\n- b\n", "the top level must be a mapping"),
     ("scheduler: 3\n", "scheduler must be a mapping to set --policy in it")],
)
def test_bad_config_files_for_policy(tmp_path, text, message):
    (tmp_path / "c.yaml").write_text(text)
    with pytest.raises(ConfigError, match=message):
        session_config(tmp_path / "c.yaml", "slo")


def test_scoring_targets_are_the_schedulers_when_it_has_them():
    # before the engine loop the config has no scheduler section (None); with it, its targets
    table = session_slo_table(session_config(None, None))
    assert table is None or table == SLOTable.default()
