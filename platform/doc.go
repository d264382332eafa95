// Package platform connects shops to the commerce platform: the install
// flow (GET /auth/install and /auth/callback, the OAuth authorization-code
// grant of platformapi), the shops' stored sessions with their refresh
// ahead of expiry (Sessions), the webhook subscriptions registered on the
// platform for the scopes a shop granted (Registrar), and the errors the
// admin API answers when the platform, a session or a grant is missing.
package platform
