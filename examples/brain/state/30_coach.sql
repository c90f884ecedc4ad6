-- Coach: goals, the morning routine, and the evening film with its rating.
CREATE TABLE coach_goals_list (
    goal_id  TEXT NOT NULL PRIMARY KEY,
    goal     TEXT NOT NULL,
    target   TEXT NOT NULL,
    progress TEXT NOT NULL,
    active   INTEGER NOT NULL
);

INSERT INTO coach_goals_list VALUES
    ('run-10k',  'Run a 10 km race',        'June',    '7 km without stopping', 1),
    ('sleep',    'In bed by 23:00',         'weekdays', '4 of 5 last week',     1),
    ('read-12',  'Read twelve books',       'December', '3 of 12',              1),
    ('no-sugar', 'No sugar in coffee',      'March',    'done',                 0);

CREATE VIEW coach_goals AS
SELECT goal_id, goal, target, progress FROM coach_goals_list WHERE active = 1;

CREATE TABLE coach_routine (
    item_id           INTEGER NOT NULL PRIMARY KEY,
    seq               INTEGER NOT NULL,
    item              TEXT    NOT NULL,
    minutes           INTEGER NOT NULL,
    skipped_yesterday INTEGER NOT NULL
);

INSERT INTO coach_routine VALUES
    (1, 1, 'glass of water',        1, 0),
    (2, 2, 'stretching',           10, 1),
    (3, 3, 'plan the three tasks',  5, 0),
    (4, 4, 'walk round the block', 15, 0);

CREATE VIEW coach_routine_today AS
SELECT seq, item, minutes, skipped_yesterday FROM coach_routine;

CREATE TABLE coach_films (
    film_id      TEXT    NOT NULL PRIMARY KEY,
    title        TEXT    NOT NULL,
    release_year INTEGER NOT NULL,
    genre        TEXT    NOT NULL,
    minutes      INTEGER NOT NULL,
    picked_on    TEXT,
    rating       INTEGER,   -- out of 10, once the owner answers
    rating_note  TEXT
);

INSERT INTO coach_films VALUES
    ('tt0245429', 'Spirited Away',            2001, 'animation', 125, '2025-04-10', 9,    'loved the bathhouse'),
    ('tt0118799', 'Life Is Beautiful',        1997, 'drama',     116, '2025-04-11', 8,    NULL),
    ('tt1375666', 'Inception',                2010, 'thriller',  148, '2025-04-13', NULL, NULL),
    ('tt0211915', 'Amélie',                   2001, 'comedy',    122, NULL,         NULL, NULL),
    ('tt0119698', 'Princess Mononoke',        1997, 'animation', 134, NULL,         NULL, NULL),
    ('tt2582802', 'Whiplash',                 2014, 'drama',     106, NULL,         NULL, NULL),
    ('tt0087843', 'Once Upon a Time in America', 1984, 'crime',  229, NULL,         NULL, NULL);

-- The candidates for tonight: films not picked yet.
CREATE VIEW coach_film_pick AS
SELECT film_id, title, release_year, genre, minutes
FROM coach_films
WHERE picked_on IS NULL;

-- One film with its rating; the rating context filters it by film_id.
CREATE VIEW coach_film AS
SELECT film_id, title, release_year, genre, picked_on, rating, rating_note
FROM coach_films;
