-- The router data model (src/fabric/data-model): edge routers keep a copy of config types, configs, identities,
-- services, posture checks, service policies and public keys, and the processes holding routers turn change-feed
-- rows into the change sets routers apply. The access service already appends rows for what moves the access
-- index: creates and deletes of identities, services and posture checks, their role attribute changes, and every
-- service policy write (names and types included). These triggers append the rest, from the store itself, so no
-- write path can forget it: origin '' (no process; every reader sees the row, the access index ignores these
-- kinds). Updates only count when a field routers see changed, so unrelated writes (role attributes, activity,
-- updated_at) add no row.

-- Config types and configs: every create, change routers see, and delete.
CREATE TRIGGER config_types_model_insert AFTER INSERT ON config_types BEGIN
  INSERT INTO change_feed (kind, entity_id, op, origin, created_at) VALUES ('configType', NEW.id, 'set', '', strftime('%Y-%m-%dT%H:%M:%fZ', 'now'));
END;
CREATE TRIGGER config_types_model_update AFTER UPDATE OF name ON config_types WHEN OLD.name IS NOT NEW.name BEGIN
  INSERT INTO change_feed (kind, entity_id, op, origin, created_at) VALUES ('configType', NEW.id, 'set', '', strftime('%Y-%m-%dT%H:%M:%fZ', 'now'));
END;
CREATE TRIGGER config_types_model_delete AFTER DELETE ON config_types BEGIN
  INSERT INTO change_feed (kind, entity_id, op, origin, created_at) VALUES ('configType', OLD.id, 'remove', '', strftime('%Y-%m-%dT%H:%M:%fZ', 'now'));
END;

CREATE TRIGGER configs_model_insert AFTER INSERT ON configs BEGIN
  INSERT INTO change_feed (kind, entity_id, op, origin, created_at) VALUES ('config', NEW.id, 'set', '', strftime('%Y-%m-%dT%H:%M:%fZ', 'now'));
END;
CREATE TRIGGER configs_model_update AFTER UPDATE OF name, config_type_id, data ON configs
  WHEN OLD.name IS NOT NEW.name OR OLD.config_type_id IS NOT NEW.config_type_id OR OLD.data IS NOT NEW.data BEGIN
  INSERT INTO change_feed (kind, entity_id, op, origin, created_at) VALUES ('config', NEW.id, 'set', '', strftime('%Y-%m-%dT%H:%M:%fZ', 'now'));
END;
CREATE TRIGGER configs_model_delete AFTER DELETE ON configs BEGIN
  INSERT INTO change_feed (kind, entity_id, op, origin, created_at) VALUES ('config', OLD.id, 'remove', '', strftime('%Y-%m-%dT%H:%M:%fZ', 'now'));
END;

-- Identities: name, disabled state, hosting costs and precedences, app data, and the per-service config
-- overrides (their own table). Creates and deletes come from the access service ('identity').
CREATE TRIGGER identities_model_update AFTER UPDATE OF name, default_hosting_cost, default_hosting_precedence, service_hosting_costs,
  service_hosting_precedences, app_data, disabled_at, disabled_until ON identities
  WHEN OLD.name IS NOT NEW.name
    OR OLD.default_hosting_cost IS NOT NEW.default_hosting_cost
    OR OLD.default_hosting_precedence IS NOT NEW.default_hosting_precedence
    OR OLD.service_hosting_costs IS NOT NEW.service_hosting_costs
    OR OLD.service_hosting_precedences IS NOT NEW.service_hosting_precedences
    OR OLD.app_data IS NOT NEW.app_data
    OR OLD.disabled_at IS NOT NEW.disabled_at
    OR OLD.disabled_until IS NOT NEW.disabled_until BEGIN
  INSERT INTO change_feed (kind, entity_id, op, origin, created_at) VALUES ('identityData', NEW.id, 'set', '', strftime('%Y-%m-%dT%H:%M:%fZ', 'now'));
END;
CREATE TRIGGER identity_service_configs_model_insert AFTER INSERT ON identity_service_configs BEGIN
  INSERT INTO change_feed (kind, entity_id, op, origin, created_at) VALUES ('identityData', NEW.identity_id, 'set', '', strftime('%Y-%m-%dT%H:%M:%fZ', 'now'));
END;
CREATE TRIGGER identity_service_configs_model_update AFTER UPDATE ON identity_service_configs BEGIN
  INSERT INTO change_feed (kind, entity_id, op, origin, created_at) VALUES ('identityData', NEW.identity_id, 'set', '', strftime('%Y-%m-%dT%H:%M:%fZ', 'now'));
END;
-- Overrides that go with their identity (cascade) need no row of their own: the identity's removal has one.
CREATE TRIGGER identity_service_configs_model_delete AFTER DELETE ON identity_service_configs
  WHEN EXISTS (SELECT 1 FROM identities WHERE id = OLD.identity_id) BEGIN
  INSERT INTO change_feed (kind, entity_id, op, origin, created_at) VALUES ('identityData', OLD.identity_id, 'set', '', strftime('%Y-%m-%dT%H:%M:%fZ', 'now'));
END;

-- Services: name, encryption requirement and configs (creates and deletes come from the access service).
CREATE TRIGGER services_model_update AFTER UPDATE OF name, encryption_required, configs ON services
  WHEN OLD.name IS NOT NEW.name OR OLD.encryption_required IS NOT NEW.encryption_required OR OLD.configs IS NOT NEW.configs BEGIN
  INSERT INTO change_feed (kind, entity_id, op, origin, created_at) VALUES ('serviceData', NEW.id, 'set', '', strftime('%Y-%m-%dT%H:%M:%fZ', 'now'));
END;

-- Posture checks: name, type and the type's fields (creates and deletes come from the access service).
CREATE TRIGGER posture_checks_model_update AFTER UPDATE OF name, type_id, details ON posture_checks
  WHEN OLD.name IS NOT NEW.name OR OLD.type_id IS NOT NEW.type_id OR OLD.details IS NOT NEW.details BEGIN
  INSERT INTO change_feed (kind, entity_id, op, origin, created_at) VALUES ('postureCheckData', NEW.id, 'set', '', strftime('%Y-%m-%dT%H:%M:%fZ', 'now'));
END;

-- Third-party CAs: routers validate client certificates with their certificates (public keys of the model).
CREATE TRIGGER cas_model_insert AFTER INSERT ON cas BEGIN
  INSERT INTO change_feed (kind, entity_id, op, origin, created_at) VALUES ('ca', NEW.id, 'set', '', strftime('%Y-%m-%dT%H:%M:%fZ', 'now'));
END;
CREATE TRIGGER cas_model_update AFTER UPDATE OF cert_pem ON cas WHEN OLD.cert_pem IS NOT NEW.cert_pem BEGIN
  INSERT INTO change_feed (kind, entity_id, op, origin, created_at) VALUES ('ca', NEW.id, 'set', '', strftime('%Y-%m-%dT%H:%M:%fZ', 'now'));
END;
CREATE TRIGGER cas_model_delete AFTER DELETE ON cas BEGIN
  INSERT INTO change_feed (kind, entity_id, op, origin, created_at) VALUES ('ca', OLD.id, 'remove', '', strftime('%Y-%m-%dT%H:%M:%fZ', 'now'));
END;
