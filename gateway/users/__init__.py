"""Who may talk to the bot, and whether their budget allows another answer."""
