--
-- PostgreSQL database dump
--

\restrict PnPooZnbtEslXVIm9kmIVj8aQGZhbv0owETaldJiI6bJocR8YkK5I0B7NuTnO0u

-- Dumped from database version 15.20 (Debian 15.20-0+deb12u1)
-- Dumped by pg_dump version 15.20 (Debian 15.20-0+deb12u1)

SET statement_timeout = 0;
SET lock_timeout = 0;
SET idle_in_transaction_session_timeout = 0;
SET client_encoding = 'UTF8';
SET standard_conforming_strings = on;
SELECT pg_catalog.set_config('search_path', '', false);
SET check_function_bodies = false;
SET xmloption = content;
SET client_min_messages = warning;
SET row_security = off;

--
-- Name: usersvc_release_0_1_0; Type: SCHEMA; Schema: -; Owner: -
--

CREATE SCHEMA usersvc_release_0_1_0;


--
-- Name: user_changes_record(); Type: FUNCTION; Schema: usersvc_release_0_1_0; Owner: -
--

CREATE FUNCTION usersvc_release_0_1_0.user_changes_record() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
BEGIN
    PERFORM pg_advisory_xact_lock('user_changes'::regclass::oid::bigint);
    IF TG_OP = 'DELETE' THEN
        INSERT INTO user_changes (id, seq) VALUES (OLD.id, nextval('user_changes_seq'))
            ON CONFLICT (id) DO UPDATE
            SET seq = EXCLUDED.seq, name = NULL, email = NULL, version = NULL;
    ELSE
        INSERT INTO user_changes (id, seq, name, email, version)
        VALUES (NEW.id, nextval('user_changes_seq'), NEW.name, NEW.email, NEW.version)
            ON CONFLICT (id) DO UPDATE SET seq = EXCLUDED.seq, name = EXCLUDED.name,
                                           email = EXCLUDED.email, version = EXCLUDED.version;
    END IF;
    PERFORM pg_notify('usersvc_user_changes', '');     -- delivered at the commit (postgres_notify)
    RETURN NULL;
END $$;


--
-- Name: user_words_sync(); Type: FUNCTION; Schema: usersvc_release_0_1_0; Owner: -
--

CREATE FUNCTION usersvc_release_0_1_0.user_words_sync() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
BEGIN
    IF TG_OP <> 'INSERT' THEN
        DELETE FROM user_words
         WHERE user_id = OLD.id AND word = ANY(OLD.name_words || OLD.email_key);
    END IF;
    IF TG_OP <> 'DELETE' THEN
        INSERT INTO user_words (word, user_id)
        SELECT DISTINCT w, NEW.id FROM unnest(NEW.name_words || NEW.email_key) AS w
            ON CONFLICT DO NOTHING;
    END IF;
    RETURN NULL;
END $$;


SET default_tablespace = '';

SET default_table_access_method = heap;

--
-- Name: user_changes; Type: TABLE; Schema: usersvc_release_0_1_0; Owner: -
--

CREATE TABLE usersvc_release_0_1_0.user_changes (
    id bigint NOT NULL,
    seq bigint NOT NULL,
    name text,
    email text,
    version bigint
);


--
-- Name: user_changes_seq; Type: SEQUENCE; Schema: usersvc_release_0_1_0; Owner: -
--

CREATE SEQUENCE usersvc_release_0_1_0.user_changes_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1;


--
-- Name: user_words; Type: TABLE; Schema: usersvc_release_0_1_0; Owner: -
--

CREATE TABLE usersvc_release_0_1_0.user_words (
    word text NOT NULL COLLATE pg_catalog."C",
    user_id bigint NOT NULL
);


--
-- Name: users; Type: TABLE; Schema: usersvc_release_0_1_0; Owner: -
--

CREATE TABLE usersvc_release_0_1_0.users (
    id bigint NOT NULL,
    name text NOT NULL,
    email text NOT NULL,
    email_key text NOT NULL COLLATE pg_catalog."C",
    version bigint NOT NULL,
    name_key text DEFAULT ''::text NOT NULL COLLATE pg_catalog."C",
    name_words text[] DEFAULT '{}'::text[] NOT NULL
);


--
-- Name: users_id_seq; Type: SEQUENCE; Schema: usersvc_release_0_1_0; Owner: -
--

ALTER TABLE usersvc_release_0_1_0.users ALTER COLUMN id ADD GENERATED ALWAYS AS IDENTITY (
    SEQUENCE NAME usersvc_release_0_1_0.users_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1
);


--
-- Name: usersvc_schema; Type: TABLE; Schema: usersvc_release_0_1_0; Owner: -
--

CREATE TABLE usersvc_release_0_1_0.usersvc_schema (
    version integer NOT NULL
);


--
-- Data for Name: user_changes; Type: TABLE DATA; Schema: usersvc_release_0_1_0; Owner: -
--

INSERT INTO usersvc_release_0_1_0.user_changes VALUES (2, 2, 'Émile Zola-Ada', 'ez@example.org', 1);
INSERT INTO usersvc_release_0_1_0.user_changes VALUES (5, 5, 'Ünïcødé Name', 'u@example.org', 1);
INSERT INTO usersvc_release_0_1_0.user_changes VALUES (4, 8, 'Grace B. Hopper', 'GRACE@example.org', 3);
INSERT INTO usersvc_release_0_1_0.user_changes VALUES (3, 9, NULL, NULL, NULL);
INSERT INTO usersvc_release_0_1_0.user_changes VALUES (6, 10, NULL, NULL, NULL);
INSERT INTO usersvc_release_0_1_0.user_changes VALUES (1, 11, 'Ada King', 'Ada@Example.org', 2);


--
-- Data for Name: user_words; Type: TABLE DATA; Schema: usersvc_release_0_1_0; Owner: -
--

INSERT INTO usersvc_release_0_1_0.user_words VALUES ('ez@example.org', 2);
INSERT INTO usersvc_release_0_1_0.user_words VALUES ('ada', 2);
INSERT INTO usersvc_release_0_1_0.user_words VALUES ('émile', 2);
INSERT INTO usersvc_release_0_1_0.user_words VALUES ('zola', 2);
INSERT INTO usersvc_release_0_1_0.user_words VALUES ('name', 5);
INSERT INTO usersvc_release_0_1_0.user_words VALUES ('u@example.org', 5);
INSERT INTO usersvc_release_0_1_0.user_words VALUES ('ünïcødé', 5);
INSERT INTO usersvc_release_0_1_0.user_words VALUES ('hopper', 4);
INSERT INTO usersvc_release_0_1_0.user_words VALUES ('b', 4);
INSERT INTO usersvc_release_0_1_0.user_words VALUES ('grace@example.org', 4);
INSERT INTO usersvc_release_0_1_0.user_words VALUES ('grace', 4);
INSERT INTO usersvc_release_0_1_0.user_words VALUES ('ada', 1);
INSERT INTO usersvc_release_0_1_0.user_words VALUES ('ada@example.org', 1);
INSERT INTO usersvc_release_0_1_0.user_words VALUES ('king', 1);


--
-- Data for Name: users; Type: TABLE DATA; Schema: usersvc_release_0_1_0; Owner: -
--

INSERT INTO usersvc_release_0_1_0.users OVERRIDING SYSTEM VALUE VALUES (2, 'Émile Zola-Ada', 'ez@example.org', 'ez@example.org', 1, 'émile zola-ada', '{ada,zola,émile}');
INSERT INTO usersvc_release_0_1_0.users OVERRIDING SYSTEM VALUE VALUES (5, 'Ünïcødé Name', 'u@example.org', 'u@example.org', 1, 'ünïcødé name', '{name,ünïcødé}');
INSERT INTO usersvc_release_0_1_0.users OVERRIDING SYSTEM VALUE VALUES (4, 'Grace B. Hopper', 'GRACE@example.org', 'grace@example.org', 3, 'grace b. hopper', '{b,grace,hopper}');
INSERT INTO usersvc_release_0_1_0.users OVERRIDING SYSTEM VALUE VALUES (1, 'Ada King', 'Ada@Example.org', 'ada@example.org', 2, 'ada king', '{ada,king}');


--
-- Data for Name: usersvc_schema; Type: TABLE DATA; Schema: usersvc_release_0_1_0; Owner: -
--

INSERT INTO usersvc_release_0_1_0.usersvc_schema VALUES (3);


--
-- Name: user_changes_seq; Type: SEQUENCE SET; Schema: usersvc_release_0_1_0; Owner: -
--

SELECT pg_catalog.setval('usersvc_release_0_1_0.user_changes_seq', 11, true);


--
-- Name: users_id_seq; Type: SEQUENCE SET; Schema: usersvc_release_0_1_0; Owner: -
--

SELECT pg_catalog.setval('usersvc_release_0_1_0.users_id_seq', 6, true);


--
-- Name: user_changes user_changes_pkey; Type: CONSTRAINT; Schema: usersvc_release_0_1_0; Owner: -
--

ALTER TABLE ONLY usersvc_release_0_1_0.user_changes
    ADD CONSTRAINT user_changes_pkey PRIMARY KEY (id);


--
-- Name: user_changes user_changes_seq_key; Type: CONSTRAINT; Schema: usersvc_release_0_1_0; Owner: -
--

ALTER TABLE ONLY usersvc_release_0_1_0.user_changes
    ADD CONSTRAINT user_changes_seq_key UNIQUE (seq);


--
-- Name: user_words user_words_pkey; Type: CONSTRAINT; Schema: usersvc_release_0_1_0; Owner: -
--

ALTER TABLE ONLY usersvc_release_0_1_0.user_words
    ADD CONSTRAINT user_words_pkey PRIMARY KEY (word, user_id);


--
-- Name: users users_pkey; Type: CONSTRAINT; Schema: usersvc_release_0_1_0; Owner: -
--

ALTER TABLE ONLY usersvc_release_0_1_0.users
    ADD CONSTRAINT users_pkey PRIMARY KEY (id);


--
-- Name: users_email_key; Type: INDEX; Schema: usersvc_release_0_1_0; Owner: -
--

CREATE UNIQUE INDEX users_email_key ON usersvc_release_0_1_0.users USING btree (email_key);


--
-- Name: users_name; Type: INDEX; Schema: usersvc_release_0_1_0; Owner: -
--

CREATE INDEX users_name ON usersvc_release_0_1_0.users USING btree (name_key, id);


--
-- Name: users user_changes_record; Type: TRIGGER; Schema: usersvc_release_0_1_0; Owner: -
--

CREATE TRIGGER user_changes_record AFTER INSERT OR DELETE OR UPDATE ON usersvc_release_0_1_0.users FOR EACH ROW EXECUTE FUNCTION usersvc_release_0_1_0.user_changes_record();


--
-- Name: users user_words_insert_delete; Type: TRIGGER; Schema: usersvc_release_0_1_0; Owner: -
--

CREATE TRIGGER user_words_insert_delete AFTER INSERT OR DELETE ON usersvc_release_0_1_0.users FOR EACH ROW EXECUTE FUNCTION usersvc_release_0_1_0.user_words_sync();


--
-- Name: users user_words_update; Type: TRIGGER; Schema: usersvc_release_0_1_0; Owner: -
--

CREATE TRIGGER user_words_update AFTER UPDATE ON usersvc_release_0_1_0.users FOR EACH ROW WHEN (((old.name_words IS DISTINCT FROM new.name_words) OR (old.email_key IS DISTINCT FROM new.email_key))) EXECUTE FUNCTION usersvc_release_0_1_0.user_words_sync();


--
-- PostgreSQL database dump complete
--

\unrestrict PnPooZnbtEslXVIm9kmIVj8aQGZhbv0owETaldJiI6bJocR8YkK5I0B7NuTnO0u

