-- A running reply's steps (CONTRACT §13, §21: thoughts, tool calls and their
-- results), saved with its text by the reply checkpoints where the turn's log
-- dies with its process (the embedded default): the frames that streamed
-- them, for a takeover to store them as streamed (stream/streamed-steps.ts).
-- Read only by that takeover; NULL for every reply whose log outlives its
-- runner.
ALTER TABLE messages ADD COLUMN checkpoint_steps jsonb;
