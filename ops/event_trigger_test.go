package ops_test

import (
	"strings"
	"testing"

	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/ops"
	"github.com/pgbus/pgbus/store"
)

// A DBA's event trigger that records every CREATE TABLE, its function
// running as the role that creates (SECURITY INVOKER) and writing where
// that role may not, refuses pgbus's migration and a queue's creation
// by a role that may create them. The refusal says it came from within
// that function, and what to do about it, rather than that the role may
// not create tables (it may) and that another role should, from its
// first words on.
func TestRefusalWithinAnEventTrigger(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	url := pgtest.NewDatabase(t)
	role, roleURL := pgtest.NewRole(t, url)
	pgtest.Exec(t, url, `
		CREATE TABLE public.ddl_audit (tag text, obj text);
		CREATE FUNCTION public.audit_ddl() RETURNS event_trigger LANGUAGE plpgsql AS $$
		DECLARE r record;
		BEGIN
			FOR r IN SELECT * FROM pg_event_trigger_ddl_commands() LOOP
				INSERT INTO public.ddl_audit VALUES (r.command_tag, r.object_identity);
			END LOOP;
		END $$;
		CREATE EVENT TRIGGER audit_ddl ON ddl_command_end EXECUTE FUNCTION public.audit_ddl();
		REVOKE ALL ON SCHEMA public FROM PUBLIC;
		DO $$ BEGIN EXECUTE format('GRANT CREATE ON DATABASE %I TO `+role+`', current_database()); END $$`)
	t.Cleanup(func() { pgtest.Exec(t, url, `DROP EVENT TRIGGER audit_ddl`) })

	st, err := store.Open(ctx, roleURL)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	_, err = st.Migrate(ctx)
	if msg := errText(err); !strings.Contains(msg, "audit_ddl()") || !strings.Contains(msg, "SECURITY DEFINER") || strings.Contains(msg, "may not do") ||
		strings.Contains(msg, "a role that may create tables") || !strings.HasPrefix(msg, "the database has no pgbus schema") {
		t.Errorf("migration refused within the event trigger: %v; want the refusal placed in audit_ddl(), with what to do, not the role's privileges blamed nor another role to migrate with", err)
	}

	pgtest.Exec(t, url, `ALTER FUNCTION public.audit_ddl() SECURITY DEFINER`)
	if _, err := st.Migrate(ctx); err != nil {
		t.Fatalf("migration with the event trigger's function SECURITY DEFINER: %v", err)
	}
	pgtest.Exec(t, url, `ALTER FUNCTION public.audit_ddl() SECURITY INVOKER`)
	svc := newService(t, st, ops.Options{})
	_, err = svc.QueueCreate(ctx, ops.QueueCreateRequest{Queue: "orders"})
	if msg := errText(err); !strings.Contains(msg, "audit_ddl()") || !strings.Contains(msg, "SECURITY DEFINER") || strings.Contains(msg, "creates queues, or a role it grants") {
		t.Errorf("queue creation refused within the event trigger: %v; want the refusal placed in audit_ddl(), with what to do, not another role named to create queues", err)
	}
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
