-- Outreach: prospects (one card each) and the plans on offer.
CREATE TABLE outreach_prospects (
    prospect_id  TEXT    NOT NULL PRIMARY KEY,
    company      TEXT    NOT NULL,
    contact      TEXT    NOT NULL,
    contact_role TEXT    NOT NULL,
    headcount    INTEGER NOT NULL,
    hook         TEXT    NOT NULL,
    stage        TEXT    NOT NULL,  -- new | touched | replied | cold
    touches      INTEGER NOT NULL,
    chat         TEXT
);

INSERT INTO outreach_prospects VALUES
    ('p_912', 'Fernhill Logistics', 'Dana Okafor',  'Head of Operations', 140, 'Opened a second warehouse in Tilburg in March', 'touched', 1, 'tg:chat:5512001'),
    ('p_913', 'Quayside Foods',     'Lars Meijer',  'COO',                 38, 'Hiring a data analyst, per their careers page', 'new',     0, NULL),
    ('p_914', 'Brixton Print',      'Alice Grant',  'Founder',             12, 'Spoke at a local meetup on print-on-demand',   'replied', 2, 'tg:chat:5512044'),
    ('p_915', 'Orbit Dental Group', 'Samir Haddad', 'Finance Director',   260, 'Merged two clinic chains last year',             'cold',    2, NULL);

-- One prospect's card; the prospect context filters it by prospect_id.
CREATE VIEW outreach_prospect AS
SELECT prospect_id, company, contact, contact_role, headcount, hook, stage, touches
FROM outreach_prospects;

CREATE TABLE outreach_plans (
    plan_id       TEXT    NOT NULL PRIMARY KEY,
    plan_name     TEXT    NOT NULL,
    monthly_price NUMERIC NOT NULL,
    currency      TEXT    NOT NULL,
    includes      TEXT    NOT NULL,
    on_sale       INTEGER NOT NULL
);

INSERT INTO outreach_plans VALUES
    ('pilot',  'Pilot',  490.00,  'EUR', 'Three dashboards, one data source, 60 days',           1),
    ('team',   'Team',   1490.00, 'EUR', 'Unlimited dashboards, five data sources, weekly review', 1),
    ('legacy', 'Legacy', 990.00,  'EUR', 'Retired plan kept for existing customers',             0);

CREATE VIEW outreach_offer_plans AS
SELECT plan_id, plan_name, monthly_price, currency, includes
FROM outreach_plans
WHERE on_sale = 1;
