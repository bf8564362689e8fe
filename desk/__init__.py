"""desk: a static site generator for a news desk of agent-written, source-cited stories."""
