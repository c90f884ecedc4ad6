-- Largo: the owner's profile, mood, check-ins and the film of the day.
CREATE TABLE largo_profile (
    fact_key   TEXT NOT NULL PRIMARY KEY,
    fact_value TEXT NOT NULL
);

INSERT INTO largo_profile VALUES
    ('name',      'Robin'),
    ('city',      'Utrecht'),
    ('likes',     'long walks, slow cinema, board games'),
    ('dislikes',  'horror films, early calls');

CREATE VIEW largo_owner_profile AS
SELECT fact_key, fact_value FROM largo_profile;

CREATE TABLE largo_moods (
    noted_on TEXT    NOT NULL PRIMARY KEY,
    mood     INTEGER NOT NULL,  -- 1 low .. 5 high
    note     TEXT
);

INSERT INTO largo_moods VALUES
    ('2025-04-08', 3, NULL),
    ('2025-04-09', 4, 'good run'),
    ('2025-04-10', 2, 'deadline stress'),
    ('2025-04-11', 3, NULL),
    ('2025-04-14', 4, 'weekend away');

CREATE VIEW largo_mood_week AS
SELECT noted_on, mood, note FROM largo_moods WHERE noted_on >= '2025-04-08';

CREATE TABLE largo_checkins (
    checkin_id TEXT    NOT NULL PRIMARY KEY,
    sent_on    TEXT    NOT NULL,
    answered   INTEGER NOT NULL,
    answer     TEXT
);

INSERT INTO largo_checkins VALUES
    ('c-0412', '2025-04-12', 1, 'Slept badly, but coffee with Sam today'),
    ('c-0413', '2025-04-13', 0, NULL),
    ('c-0414', '2025-04-14', 1, 'Fine. Finishing the report is the one thing');

CREATE VIEW largo_checkins_recent AS
SELECT checkin_id, sent_on, answered, answer FROM largo_checkins;

CREATE TABLE largo_films (
    film_id      TEXT    NOT NULL PRIMARY KEY,
    title        TEXT    NOT NULL,
    director     TEXT    NOT NULL,
    minutes      INTEGER NOT NULL,
    shown_on     TEXT,
    liked        INTEGER  -- 1 yes, 0 no, empty until the owner says
);

INSERT INTO largo_films VALUES
    ('lf-001', 'Paterson',          'Jim Jarmusch',      118, '2025-04-12', 1),
    ('lf-002', 'Columbus',          'Kogonada',          104, '2025-04-13', NULL),
    ('lf-003', 'Perfect Days',      'Wim Wenders',       124, NULL,         NULL),
    ('lf-004', 'Tokyo Story',       'Yasujiro Ozu',      136, NULL,         NULL),
    ('lf-005', 'The Straight Story', 'David Lynch',      112, NULL,         NULL);

CREATE VIEW largo_film_shortlist AS
SELECT film_id, title, director, minutes FROM largo_films WHERE shown_on IS NULL;

-- One film; the film context filters it by film_id.
CREATE VIEW largo_film AS
SELECT film_id, title, director, minutes, shown_on, liked FROM largo_films;
