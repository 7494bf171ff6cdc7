"""Media sent to the bot: the blob folder, image preparation, and turning files into content."""
