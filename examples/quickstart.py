# The product brief's quickstart; only the model file name differs.
# Initialize an MCP inference session (configure mcp-config.yaml first)
from mcp.runtime import Session

session = Session.from_config("mcp-config.yaml")
# Load the compiled model (.mcp format); `make demo` pulled and compiled it
model = session.load_model("smollm2-135m-instruct.mcp")
# Run inference (the best backend is chosen automatically)
result = model.infer(
    prompt="Explain quantum entanglement in simple terms.",
    max_tokens=128,
    temperature=0.7,
)
print(result.text)
