-- Dutch coach: one table per practice, each with today's set, and the learner's streak.
CREATE TABLE dutch_knm_items (
    question_id TEXT    NOT NULL PRIMARY KEY,
    topic       TEXT    NOT NULL,
    question    TEXT    NOT NULL,
    choices     TEXT    NOT NULL,
    answer      TEXT    NOT NULL,
    today       INTEGER NOT NULL
);

INSERT INTO dutch_knm_items VALUES
    ('knm-014', 'werk',       'Hoeveel vakantiedagen heb je minimaal bij een fulltime baan?', 'A 10 | B 20 | C 25 | D 30', 'B', 1),
    ('knm-027', 'zorg',       'Naar wie ga je eerst als je ziek bent?',                      'A apotheek | B huisarts | C ziekenhuis | D tandarts', 'B', 1),
    ('knm-031', 'geschiedenis', 'Wanneer is Koningsdag?',                                     'A 5 mei | B 27 april | C 4 mei | D 31 december', 'B', 0);

CREATE VIEW dutch_knm_questions AS
SELECT question_id, topic, question, choices, answer FROM dutch_knm_items WHERE today = 1;

CREATE TABLE dutch_listen_items (
    clip_id    TEXT    NOT NULL PRIMARY KEY,
    title      TEXT    NOT NULL,
    url        TEXT    NOT NULL,
    seconds    INTEGER NOT NULL,
    questions  TEXT    NOT NULL,
    today      INTEGER NOT NULL
);

INSERT INTO dutch_listen_items VALUES
    ('lis-008', 'Bij de bakker',     'https://example.org/clips/lis-008.mp3', 74, '1 Wat koopt de man? 2 Hoeveel betaalt hij? 3 Wanneer komt hij terug?', 1),
    ('lis-009', 'Een afspraak maken', 'https://example.org/clips/lis-009.mp3', 92, '1 Met wie belt ze? 2 Welke dag? 3 Hoe laat?', 0);

CREATE VIEW dutch_listen_clips AS
SELECT clip_id, title, url, seconds, questions FROM dutch_listen_items WHERE today = 1;

CREATE TABLE dutch_write_tasks (
    task_id   TEXT    NOT NULL PRIMARY KEY,
    task      TEXT    NOT NULL,
    max_words INTEGER NOT NULL,
    today     INTEGER NOT NULL
);

INSERT INTO dutch_write_tasks VALUES
    ('wri-005', 'Schrijf een e-mail aan je buurvrouw: je feest zaterdag en het wordt laat.', 80, 1),
    ('wri-006', 'Schrijf aan je werkgever dat je morgen ziek bent.',                          60, 0);

CREATE VIEW dutch_write_prompts AS
SELECT task_id, task, max_words FROM dutch_write_tasks WHERE today = 1;

CREATE TABLE dutch_read_items (
    text_id   TEXT    NOT NULL PRIMARY KEY,
    title     TEXT    NOT NULL,
    body      TEXT    NOT NULL,
    questions TEXT    NOT NULL,
    today     INTEGER NOT NULL
);

INSERT INTO dutch_read_items VALUES
    ('rea-011', 'Nieuwe regels voor het afval', 'Vanaf 1 juni haalt de gemeente het groene afval op dinsdag op, niet meer op vrijdag.', '1 Wat verandert er? 2 Vanaf wanneer?', 1),
    ('rea-012', 'De bibliotheek',               'De bibliotheek is op zondag gesloten. Op woensdag is er een taalcafé.',            '1 Wanneer is de bibliotheek dicht? 2 Wat is er op woensdag?', 0);

CREATE VIEW dutch_read_texts AS
SELECT text_id, title, body, questions FROM dutch_read_items WHERE today = 1;

CREATE TABLE dutch_progress (
    skill         TEXT    NOT NULL PRIMARY KEY,  -- knm | listen | write | read
    streak_days   INTEGER NOT NULL,
    last_done_on  TEXT,
    last_score    INTEGER
);

INSERT INTO dutch_progress VALUES
    ('knm',    12, '2025-04-14', 8),
    ('listen',  5, '2025-04-14', 6),
    ('write',   0, '2025-04-11', 5),
    ('read',    9, '2025-04-14', 9);

CREATE VIEW dutch_streak AS
SELECT skill, streak_days, last_done_on, last_score FROM dutch_progress;
