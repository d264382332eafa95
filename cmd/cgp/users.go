package main

import (
	"bufio"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/cgp-platform/cgp/app"
	"github.com/cgp-platform/cgp/auth"
)

// usersCommand is `cgp users`: the admin interface's merchant users.
func usersCommand(cfg *Config, stdout, stderr io.Writer) *cobra.Command {
	return group("users", "Manage the admin interface's merchant users", newUsersCreate(cfg, stdout, stderr), newUsersList(cfg, stdout, stderr))
}

func newUsersCreate(cfg *Config, stdout, stderr io.Writer) *cobra.Command {
	var account, email, role string
	var fromStdin bool
	cmd := &cobra.Command{Use: "create", Short: "Create a merchant user of an account (password read from standard input)", Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := requireFlags(cmd, "account", "email", "role"); err != nil {
				return err
			}
			if !fromStdin {
				return usageError{fmt.Errorf("flag --password-stdin is required: the password is read from standard input, never from a flag")}
			}
			password, err := readPassword(cmd.InOrStdin())
			if err != nil {
				return err
			}
			return withCore(cmd.Context(), cfg, stderr, func(c *Core) error {
				u, err := app.CreateUser(cmd.Context(), c, account, email, role, password, cliMeta())
				if err != nil {
					return err
				}
				return printJSON(stdout, u)
			})
		}}
	f := cmd.Flags()
	f.StringVar(&account, "account", "", "account id (acc_…)")
	f.StringVar(&email, "email", "", "the user's e-mail address (unique across the service, compared in lower case)")
	f.StringVar(&role, "role", "", "role: owner, admin or read_only")
	f.BoolVar(&fromStdin, "password-stdin", false, fmt.Sprintf("read the password (%d to %d bytes) from the first line of standard input", auth.MinPasswordLength, auth.MaxPasswordLength))
	return cmd
}

// readPassword reads the first line of r, without its line ending.
func readPassword(r io.Reader) (string, error) {
	line, err := bufio.NewReader(io.LimitReader(r, auth.MaxPasswordLength+2)).ReadString('\n')
	if err != nil && err != io.EOF {
		return "", fmt.Errorf("read the password from standard input: %w", err)
	}
	line = strings.TrimSuffix(strings.TrimSuffix(line, "\n"), "\r")
	if err := auth.CheckPassword(line); err != nil {
		return "", usageError{err}
	}
	return line, nil
}

func newUsersList(cfg *Config, stdout, stderr io.Writer) *cobra.Command {
	var account string
	cmd := &cobra.Command{Use: "list", Short: "List the merchant users (ids, e-mails, roles; never passwords)", Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return withCore(cmd.Context(), cfg, stderr, func(c *Core) error {
				users, err := app.ListUsers(cmd.Context(), c, account)
				if err != nil {
					return err
				}
				return printJSON(stdout, map[string]any{"users": users})
			})
		}}
	cmd.Flags().StringVar(&account, "account", "", "only the users of this account (acc_…)")
	return cmd
}
