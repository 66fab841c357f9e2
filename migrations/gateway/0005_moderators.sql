-- 0005: fair-play moderators. A registered player granted the role by an operator
-- (`frontier admin grant-moderator NAME`) gets the `moderator` claim in the tokens it is
-- issued from then on (at its next sign-in), which opens the moderation API
-- (`/api/moderation/…`) to it. Guests are never moderators. The reports, decisions and
-- marks themselves are the fair-play service's tables, not the gateway's.
ALTER TABLE players
    ADD COLUMN moderator boolean NOT NULL DEFAULT false,
    ADD CONSTRAINT players_moderator_registered CHECK (NOT (moderator AND guest));
