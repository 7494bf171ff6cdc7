"""Optional engines that plug into the agent through its public contracts only.

Each kind of plugin has its own folder (``plugins/context_engine/<name>/``); nothing here is
imported unless the configuration names it.
"""
