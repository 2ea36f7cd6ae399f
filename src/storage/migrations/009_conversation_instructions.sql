-- The custom instructions a conversation keeps (CONTRACT §16-§17): an imported
-- chatgpt.com conversation's user instructions (its hidden
-- user_editable_context message), as the model reads them. chatgpt.com
-- applies instructions to the chats started under them, so while this is set
-- it takes the place of the user's current instructions for the
-- conversation's turns; null (every conversation this service started) means
-- the user's current ones.
ALTER TABLE conversations ADD COLUMN instructions text;
