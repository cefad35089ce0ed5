module mcp2026

go 1.19
