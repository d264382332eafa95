package domain

import "reflect"

// SecretMarker replaces the value of a secret wherever an event is shown
// (the audit history, a data export): the history tells that a secret
// was set or rotated, never what it is. A secret is shown once, to
// whoever set it, and kept only sealed in the log and the read models.
const SecretMarker = "[set]"

// SecretHolder is an event that carries secrets (a webhook or signing
// secret, an app secret). Secrets returns pointers to its secret fields,
// so that whoever must hide them (Shown) or seal them (the read models)
// needs no list of its own; it is implemented on the pointer type.
type SecretHolder interface {
	Event
	Secrets() []*string
}

// Shown returns ev as it may be shown: a copy whose secrets read
// SecretMarker (an empty secret stays empty) when it carries any,
// otherwise ev itself. ev is never changed.
func Shown(ev Event) Event {
	if _, ok := ev.(SecretHolder); !ok {
		return ev
	}
	v := reflect.ValueOf(ev).Elem() // only pointers implement SecretHolder
	c := reflect.New(v.Type())
	c.Elem().Set(v)
	shown := c.Interface().(SecretHolder)
	for _, s := range shown.Secrets() {
		if *s != "" {
			*s = SecretMarker
		}
	}
	return shown
}

// Secrets implements SecretHolder.
func (e *ShopCreated) Secrets() []*string { return []*string{&e.WebhookSecret} }

// Secrets implements SecretHolder.
func (e *WhatsAppAccountConnected) Secrets() []*string {
	return []*string{&e.AppSecret, &e.AccessToken}
}

// Secrets implements SecretHolder.
func (e *WhatsAppAccountCredentialsRotated) Secrets() []*string {
	return []*string{&e.AppSecret, &e.AccessToken}
}

// Secrets implements SecretHolder.
func (e *MarketplaceConnected) Secrets() []*string { return []*string{&e.Secret} }

// Secrets implements SecretHolder.
func (e *MarketplaceSecretRotated) Secrets() []*string { return []*string{&e.Secret} }

// Secrets implements SecretHolder.
func (e *ShopPrivacySettingsChanged) Secrets() []*string { return []*string{&e.SigningSecret} }
