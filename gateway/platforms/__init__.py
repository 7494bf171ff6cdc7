"""Platform adapters: each turns a chat platform's events into InboundMessages and sends replies.

The package itself imports nothing: the configuration imports the platform registry
(:mod:`gateway.platforms.registry`) and must not pull in the adapters' machinery with it.
"""
