package main

import "context"

// TokenName implements readapi.TokenNames over the tenancy read model.
func (d directory) TokenName(ctx context.Context, id string) (string, error) {
	t, err := d.q.TokenByID(ctx, id)
	if err != nil {
		return "", err
	}
	return t.Name, nil
}
