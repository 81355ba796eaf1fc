-- A message's extracted text or HTML (its new content, without quoted history) is nearly
-- always the whole text or HTML: a first message quotes nothing. It was stored twice, and
-- sent to PostgreSQL twice, on every delivery (a 32 KB HTML message's 28 KB of HTML twice;
-- bench/PROFILE.md, issue 29). Now the column holds NULL and the flag says that the extract
-- is the body (messages/model.ts, toMessage, reads them back as one); rows written before
-- keep their copies, with the flags false.
ALTER TABLE messages
  ADD COLUMN extracted_text_is_text boolean NOT NULL DEFAULT false,
  ADD COLUMN extracted_html_is_html boolean NOT NULL DEFAULT false;
