-- Home: the family's shopping list.
CREATE TABLE home_shopping_items (
    item_id  INTEGER NOT NULL PRIMARY KEY,
    item     TEXT    NOT NULL,
    quantity TEXT,
    added_by TEXT    NOT NULL,
    added_on TEXT    NOT NULL,
    done     INTEGER NOT NULL  -- 0 open, 1 ticked off
);

INSERT INTO home_shopping_items VALUES
    (1, 'oat milk',         '2 cartons', 'Sanne', '2025-04-12', 0),
    (2, 'bread',            '1 loaf',    'Joost', '2025-04-12', 1),
    (3, 'apples',           '1 kg',      'Mila',  '2025-04-13', 0),
    (4, 'dishwasher tabs',  NULL,        'Sanne', '2025-04-13', 0),
    (5, 'birthday candles', '12',        'Joost', '2025-04-14', 0);

CREATE VIEW home_shopping_open AS
SELECT item_id, item, quantity, added_by, added_on
FROM home_shopping_items
WHERE done = 0;
