"""``OPAPolicyEngine``: the same decisions from an OPA server's REST data API.

``POST {url}/v1/data/mcp/decision/{input_stage|output_stage}`` with ``{"input": document}``;
OPA answers ``{"result": {...}}`` (no ``result`` when the document is undefined). The server
must hold a bundle with the ``mcp.decision`` package (``bundle.DECISION_MODULE``) beside the
policies. The version recorded is the server's, from ``/v1/data/mcp/decision/version`` when the
bundle defines it, else its URL.
"""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from typing import Any

from mcp.governance.errors import PolicyError
from mcp.governance.policy.bundle import ENTRYPOINTS
from mcp.governance.policy.decision import STAGES, Decision, parse_decision


class OPAPolicyEngine:
    def __init__(self, url: str, timeout_s: float = 2.0) -> None:
        self.url = url.rstrip("/")
        self.timeout_s = timeout_s
        self.version = f"opa:{self.url}"

    def evaluate(self, stage: str, document: dict[str, Any]) -> Decision:
        if stage not in STAGES:
            raise PolicyError(f"policy stage {stage!r}: use one of {', '.join(STAGES)}")
        answer = self._post(f"/v1/data/{ENTRYPOINTS[stage]}", {"input": document})
        if "result" not in answer:
            raise PolicyError(f"OPA at {self.url}: {ENTRYPOINTS[stage]} is undefined; load a bundle with the "
                              "mcp.decision package (docs/governance.md)")
        return parse_decision(stage, answer["result"], self.version)

    def close(self) -> None:
        return None

    def _post(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        request = urllib.request.Request(self.url + path, data=json.dumps(body).encode(), method="POST",
                                         headers={"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(request, timeout=self.timeout_s) as response:
                answer = json.loads(response.read())
        except urllib.error.HTTPError as exc:
            raise PolicyError(f"OPA at {self.url} answered {exc.code} on {path}: "
                              f"{exc.read()[:200].decode(errors='replace')}") from None
        except (urllib.error.URLError, TimeoutError, OSError) as exc:
            raise PolicyError(f"OPA at {self.url} cannot be reached ({exc}); check governance.policy.opa_url") from None
        except json.JSONDecodeError:
            raise PolicyError(f"OPA at {self.url} answered {path} with something that is not JSON") from None
        if not isinstance(answer, dict):
            raise PolicyError(f"OPA at {self.url} answered {path} with {answer!r}, not an object")
        return answer
