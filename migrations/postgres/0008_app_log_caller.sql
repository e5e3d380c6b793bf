-- Who ran a logged command: NULL for appserver's own clients and agent, or a JSON object such as
-- {"kind":"mcp","name":"claude-code"} for an outside agent that called through the MCP server.
ALTER TABLE app_log ADD COLUMN caller TEXT;
