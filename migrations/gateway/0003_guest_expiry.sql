-- 0003: guest expiry.
-- The gateway removes guests without a finished game some time after their creation
-- (FRONTIER_GUEST_TTL, default 7 days), in batches, oldest first. This index finds them
-- without reading registered players; which of them have a finished game is the rating
-- service's to say (it owns the games).
CREATE INDEX players_guests_by_age ON players (created_at) WHERE guest;
