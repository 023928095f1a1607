// Package benchkit is the machinery of `sweeper bench`: a database of the
// benchmark's own on a server found like the tests find theirs, a count of
// the SQL statements a pool sends, the process's peak resident memory, and
// River's own throughput for no-op jobs as the yardstick sweeper's is
// compared with.
package benchkit

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/url"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/sweeper/sweeper/testkit/pgtemp"
)

// Server is the PostgreSQL server the benchmark creates its database on.
type Server struct {
	// URL connects to a database of the server the user may create
	// databases from.
	URL string
	// Cluster is the throwaway cluster started for the run, or nil.
	Cluster *pgtemp.Cluster
}

// FindServer returns envURL when it is set (it must answer), else
// [pgtemp.LocalURL] when it answers, else a throwaway cluster, which the
// caller stops with [Server.Close].
func FindServer(ctx context.Context, envURL string) (*Server, error) {
	if envURL != "" {
		if err := pgtemp.Ping(ctx, envURL); err != nil {
			return nil, fmt.Errorf("%s: %w", pgtemp.Redact(envURL), err)
		}
		return &Server{URL: envURL}, nil
	}
	localErr := pgtemp.Ping(ctx, pgtemp.LocalURL)
	if localErr == nil {
		return &Server{URL: pgtemp.LocalURL}, nil
	}
	c, err := pgtemp.Start(ctx)
	if err != nil {
		return nil, fmt.Errorf("no PostgreSQL: %s does not answer (%v), and no throwaway cluster could be started: %w",
			pgtemp.LocalURL, localErr, err)
	}
	return &Server{URL: c.URL, Cluster: c}, nil
}

// Close stops the throwaway cluster, if one was started.
func (s *Server) Close() error {
	if s.Cluster == nil {
		return nil
	}
	return s.Cluster.Stop()
}

// Database is a database created for one run.
type Database struct {
	// Name is the database's name, prefix_<random hex>.
	Name string
	// URL connects to it.
	URL    string
	server string
}

// CreateDatabase creates an empty database named prefix_<random> on the
// server. Drop it with [Database.Drop].
func (s *Server) CreateDatabase(ctx context.Context, prefix string) (*Database, error) {
	var b [4]byte
	if _, err := rand.Read(b[:]); err != nil {
		return nil, err
	}
	name := prefix + "_" + hex.EncodeToString(b[:])
	conn, err := pgx.Connect(ctx, s.URL)
	if err != nil {
		return nil, err
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{name}.Sanitize()); err != nil {
		return nil, fmt.Errorf("create database %s: %w", name, err)
	}
	parsed, err := url.Parse(s.URL)
	if err != nil {
		return nil, err
	}
	parsed.Path = "/" + name
	return &Database{Name: name, URL: parsed.String(), server: s.URL}, nil
}

// Drop drops the database, disconnecting whoever is still connected. It
// uses a context of its own, so that an interrupted run still cleans up.
func (d *Database) Drop() error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, d.server)
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "DROP DATABASE IF EXISTS "+pgx.Identifier{d.Name}.Sanitize()+" WITH (FORCE)"); err != nil {
		return fmt.Errorf("drop database %s: %w", d.Name, err)
	}
	return nil
}

// Exists reports whether a database named name exists on the server at
// serverURL.
func Exists(ctx context.Context, serverURL, name string) (bool, error) {
	conn, err := pgx.Connect(ctx, serverURL)
	if err != nil {
		return false, err
	}
	defer conn.Close(ctx)
	var exists bool
	err = conn.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1)", name).Scan(&exists)
	return exists, err
}
