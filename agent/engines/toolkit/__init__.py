"""The public engine toolkit: pure functions every context engine may reuse.

Where a compaction may cut without splitting a tool call from its results
(:mod:`~agent.engines.toolkit.boundaries`), how the compacted middle is written out for a
summary model (:mod:`~agent.engines.toolkit.summary_prompt`), how durable facts for the host's
memory ride in the same summary request (:mod:`~agent.engines.toolkit.durable_facts`), and how
old tool outputs and attachments shrink without a model call
(:mod:`~agent.engines.toolkit.tool_output_pruning`).
The built-in compressor (:mod:`agent.compressor`) and plugin engines import them from here.
"""
