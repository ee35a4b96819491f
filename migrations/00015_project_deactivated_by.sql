-- +goose Up
-- Who turned a project off (issue 13): an owner may turn their own project
-- on again in the dashboard, but not one the operator deactivated
-- (interface.md: "Project is deactivated — disabled by an admin").
ALTER TABLE projects ADD COLUMN deactivated_by TEXT CHECK (deactivated_by IN ('operator', 'owner'));
UPDATE projects SET deactivated_by = 'operator' WHERE NOT active;

-- +goose Down
ALTER TABLE projects DROP COLUMN deactivated_by;
