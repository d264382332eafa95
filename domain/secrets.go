package domain

// SecretMarker replaces the value of a secret wherever an event is shown
// (the audit history, a data export): the history tells that a secret
// was set or rotated, never what it is. A secret is shown once, to
// whoever set it, and kept only sealed in the log and the read models.
const SecretMarker = "[set]"

// SecretHolder is an event that carries a secret (a webhook or signing
// secret, an app secret). WithoutSecrets returns a copy whose secrets
// read SecretMarker (an empty secret stays empty).
type SecretHolder interface {
	Event
	WithoutSecrets() Event
}

// Shown returns ev as it may be shown: without its secrets when it
// carries any, otherwise ev itself.
func Shown(ev Event) Event {
	if s, ok := ev.(SecretHolder); ok {
		return s.WithoutSecrets()
	}
	return ev
}

func mask(s string) string {
	if s == "" {
		return ""
	}
	return SecretMarker
}

// WithoutSecrets implements SecretHolder.
func (e ShopCreated) WithoutSecrets() Event {
	e.WebhookSecret = mask(e.WebhookSecret)
	return &e
}

// WithoutSecrets implements SecretHolder.
func (e WhatsAppAccountConnected) WithoutSecrets() Event {
	e.AppSecret = mask(e.AppSecret)
	return &e
}

// WithoutSecrets implements SecretHolder.
func (e WhatsAppAccountCredentialsRotated) WithoutSecrets() Event {
	e.AppSecret = mask(e.AppSecret)
	return &e
}

// WithoutSecrets implements SecretHolder.
func (e MarketplaceConnected) WithoutSecrets() Event {
	e.Secret = mask(e.Secret)
	return &e
}

// WithoutSecrets implements SecretHolder.
func (e MarketplaceSecretRotated) WithoutSecrets() Event {
	e.Secret = mask(e.Secret)
	return &e
}

// WithoutSecrets implements SecretHolder.
func (e ShopPrivacySettingsChanged) WithoutSecrets() Event {
	e.SigningSecret = mask(e.SigningSecret)
	return &e
}
