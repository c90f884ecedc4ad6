"""Keel's doors for coding agents: an MCP server and a prompt hook.

- `keel.mcp.server`: the Model Context Protocol server (`keel mcp`), on the official MCP
  Python SDK, over stdio or streamable HTTP on loopback. It imports the SDK, which takes
  about a second: import it only to serve.
- `keel.mcp.hook`: the prompt hook (`keel agent-hook`) for Claude Code and agents with the
  same hook protocol; it needs no SDK.
- `keel.mcp.room`: what both serve — one conversation, as one role.

This file imports neither, so that the hook never pays for the SDK.
"""
