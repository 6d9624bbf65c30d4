import ContinuumCore
import ContinuumNode
import ContinuumStore
import Foundation
import Hummingbird
import NIOCore

/// A browser linked as a device of this node's account (Docs/API.md, "Linked browsers"): the owner makes a link,
/// the browser makes its own Ed25519 key (WebCrypto, not extractable), consents to being added, and then signs its
/// records itself; the node checks them, stores them and offers them to its peers like any device's.
struct BrowserRoutes: Sendable {
    let store: ContinuumStore
    let actions: NodeActions
    let identity: NodeIdentity
    let sessions: BrowserSessions
    let uploads: UploadReceiver
    /// Whether the API is served over TLS: the session cookie is then `Secure`.
    let secure: Bool
    /// The addresses a phone on the LAN opens (``PhoneAccess/urls``, without the token).
    let lanURLs: @Sendable () -> [String]

    func register(on api: RouterGroup<BasicRequestContext>) {
        api.post("browser/link") { request, context in try await makeLink(request, context: context) }
        api.post("browser/link/inspect") { request, context in try await inspect(request, context: context) }
        api.post("browser/link/accept") { request, context in try await accept(request, context: context) }
        api.post("browser/challenge") { request, context in try await challenge(request, context: context) }
        api.post("browser/session") { request, context in try await openSession(request, context: context) }
        api.delete("browser/session") { request, _ in
            if let token = BrowserSessions.token(of: request) { await sessions.close(token) }
            return Response(status: .noContent)
        }
        api.get("browser/me") { request, _ in try await me(try await session(request)) }
        api.get("browser/logs/:author") { request, context in try await logHead(request, context: context) }
        api.post("browser/photos") { request, context in try await stagePhoto(request, context: context) }
        api.post("browser/records") { request, context in try await submit(request, context: context) }
    }

    /// The session the request carries (the access middleware let it in); 401 without one.
    func session(_ request: Request) async throws -> BrowserSession {
        guard let token = BrowserSessions.token(of: request), let session = await sessions.session(token) else {
            throw APIError(
                .unauthorized,
                "no_session",
                "this route is for a linked browser: open a session with its key first (POST /api/browser/challenge)"
            )
        }
        return session
    }

    // MARK: Linking

    struct LinkBody: Decodable { let expiresMinutes: Int? }

    struct LinkJSON: Encodable {
        let url: String
        let code: String
        let account: String
        let expiresAt: String
        let qrSvg: String?
    }

    /// `POST /api/browser/link` (the owner): a one-time link for a phone's browser, as a URL and its QR code.
    func makeLink(_ request: Request, context: BasicRequestContext) async throws -> Response {
        let body = try await request.decodeJSON(as: LinkBody.self, context: context)
        let minutes = try DeviceRoutes.linkMinutes(body.expiresMinutes)
        let account = try await ownAccount()
        let ticket = try await storeCall(noun: "device") {
            try await store.newLinkTicket(lifetime: .seconds(minutes * 60), by: identity)
        }
        let code = ticket.secret.base64URL
        let url = pageURL(request) + "#link=" + code
        return try json(
            LinkJSON(
                url: url,
                code: code,
                account: account.hex,
                expiresAt: ticket.expiresAt.rfc3339,
                qrSvg: (try? QRCode(encoding: url))?.svg()
            ),
            status: .created
        )
    }

    struct CodeBody: Decodable { let code: String }

    struct InspectJSON: Encodable {
        let account: String
        let name: String?
    }

    /// `POST /api/browser/link/inspect`: whose account a link code adds the browser to, before it makes its key.
    func inspect(_ request: Request, context: BasicRequestContext) async throws -> Response {
        let body = try await request.decodeJSON(as: CodeBody.self, context: context)
        let secret = try Self.linkSecret(body.code)
        _ = try await Self.linkCall {
            try await store.checkLink(ticket: Data(InviteCode.id(of: secret)), proves: { $0 == secret }, by: identity)
        }
        return try json(
            InspectJSON(account: try await ownAccount().hex, name: try await store.accountName(of: identity))
        )
    }

    struct AcceptBody: Decodable {
        let code: String
        let device: String
        let consent: String
        let record: String
    }

    struct SessionJSON: Encodable {
        let device: String
        let account: String
        let name: String?
        /// A guest's group; absent for a device of the owner's account.
        let group: String?
    }

    /// `POST /api/browser/link/accept`: the browser's key, its consent and its joining record; the node signs the
    /// device-add, stores both, and opens a session.
    func accept(_ request: Request, context: BasicRequestContext) async throws -> Response {
        let body = try await request.decodeJSON(as: AcceptBody.self, context: context)
        let secret = try Self.linkSecret(body.code)
        guard let device = AuthorID(hex: body.device) else {
            throw APIError.badRequest("device must be the browser's public key: 64 hex digits", field: "device")
        }
        guard let consent = Data(base64URL: body.consent), consent.count == 64 else {
            throw APIError.badRequest("consent must be a 64-byte signature in base64url", field: "consent")
        }
        let account = try await ownAccount()
        let joining = try verified(body.record, field: "record")
        guard joining.header.author == device, joining.header.sequence == 1, let content = joining.body,
            AccountRecord(content, author: device) == .joining(account)
        else {
            throw APIError.badRequest(
                "record must be the browser's joining record: kind 8, sequence 1, signed by the device, naming account "
                    + account.short,
                field: "record"
            )
        }
        _ = try await Self.linkCall {
            try await store.signDeviceAdd(
                ticket: Data(InviteCode.id(of: secret)),
                device: device,
                consent: consent,
                proves: { $0 == secret },
                by: identity
            )
        }
        _ = try await storeSigned(joining, device: device)
        return try await sessionResponse(device: device, account: account, request: request, status: .created)
    }

    // MARK: Sessions

    struct DeviceBody: Decodable { let device: String }
    struct ChallengeJSON: Encodable { let nonce: String }

    /// `POST /api/browser/challenge`: a nonce for a linked browser to sign with its key.
    func challenge(_ request: Request, context: BasicRequestContext) async throws -> Response {
        let body = try await request.decodeJSON(as: DeviceBody.self, context: context)
        guard let device = AuthorID(hex: body.device) else {
            throw APIError.badRequest("device must be the browser's public key: 64 hex digits", field: "device")
        }
        return try json(ChallengeJSON(nonce: await sessions.challenge(for: device).base64URL))
    }

    struct SessionBody: Decodable {
        let device: String
        let nonce: String
        let signature: String
    }

    /// `POST /api/browser/session`: the signed nonce; a session for a device of this node's account.
    func openSession(_ request: Request, context: BasicRequestContext) async throws -> Response {
        let body = try await request.decodeJSON(as: SessionBody.self, context: context)
        guard let device = AuthorID(hex: body.device), let nonce = Data(base64URL: body.nonce),
            let signature = Data(base64URL: body.signature)
        else { throw APIError.badRequest("device (hex), nonce and signature (base64url) are needed") }
        guard await sessions.answer(device: device, nonce: nonce, signature: signature) else {
            throw APIError(
                .unauthorized,
                "bad_signature",
                "the signature is not the device's over this node's challenge (or the challenge expired); ask again"
            )
        }
        if let guest = try await store.guest(device) {
            guard guest.state == .active, let account = guest.account else {
                throw APIError(
                    .forbidden,
                    "not_a_device",
                    "the node's owner removed this guest; a new guest link lets it in again, with new keys"
                )
            }
            return try await sessionResponse(
                device: device,
                account: account,
                group: guest.group,
                name: guest.name,
                request: request,
                status: .ok
            )
        }
        let account = try await ownAccount()
        guard try await store.isDevice(device, of: account) else {
            throw APIError(
                .forbidden,
                "not_a_device",
                "this browser is not a device of this node's account (never linked, or removed); ask the owner for a "
                    + "new link"
            )
        }
        return try await sessionResponse(device: device, account: account, request: request, status: .ok)
    }

    /// Opens a session (a guest's in `group`) and answers with its cookie. `name`: the person's (default: the
    /// owner's, whose account a linked phone is a device of).
    func sessionResponse(
        device: AuthorID,
        account: AccountID,
        group: GroupID? = nil,
        name: String? = nil,
        request: Request,
        status: HTTPResponse.Status
    ) async throws -> Response {
        let token = await sessions.open(device: device, account: account, group: group)
        let shown = group == nil ? try await store.accountName(of: identity) : name
        var response = try json(
            SessionJSON(device: device.hex, account: account.hex, name: shown, group: group?.hex),
            status: status
        )
        response.setCookie(
            Cookie(
                name: BrowserSessions.cookieName(request.head.authority ?? ""),
                value: token,
                path: "/",
                secure: secure,
                httpOnly: true,
                sameSite: .strict
            )
        )
        return response
    }

    // MARK: Helpers

    /// The web UI's address for a phone: the LAN address it opens; else the address this request was made at (a
    /// node on loopback).
    func pageURL(_ request: Request) -> String {
        lanURLs().first ?? "\(secure ? "https" : "http")://\(request.head.authority ?? "localhost")/"
    }

    func ownAccount() async throws -> AccountID { try await DeviceRoutes.account(of: identity, in: store) }

    /// The secret of a phone's (`fragment` `link`) or a guest's (`guest`) link code, else 400 on `code`.
    static func linkSecret(_ code: String, fragment: String = "link") throws -> Data {
        guard let secret = Data(base64URL: code), secret.count == InviteCode.secretBytes else {
            let what = fragment == "guest" ? "a guest link's code" : "a browser link code"
            throw APIError.badRequest(
                "code is not \(what) (the part after #\(fragment)= in the link's address)",
                field: "code"
            )
        }
        return secret
    }

    /// Runs a phone's or a guest's link call, answering its refusal (unknown, used, closed, expired, full) with 403
    /// `link_refused`.
    static func linkCall<T>(_ action: () async throws -> T) async throws -> T {
        do {
            return try await action()
        } catch let error as StoreError where error.code == .notMember {
            throw APIError(.forbidden, "link_refused", error.message)
        }
    }

    /// A record in base64url, decoded and its signature verified; 400 `bad_record` on `field` otherwise.
    func verified(_ text: String, field: String) throws -> VerifiedRecord {
        guard let bytes = Data(base64URL: text) else {
            throw APIError.badRequest("\(field) must be the record's bytes in base64url", field: field)
        }
        do {
            return try SignedRecord(bytes: Array(bytes)).verify()
        } catch {
            throw APIError(.badRequest, "bad_record", "the record was refused: \(error)", field: field)
        }
    }

    /// Stores a record the browser signed, answering its refusal: 403 `not_yours`, 409 `stale_log`, 422
    /// `record_refused`.
    func storeSigned(_ record: VerifiedRecord, device: AuthorID, guest: Bool = false) async throws -> VerifiedRecord {
        do {
            return try await actions.storeSigned(record, device: device, follow: !guest)
        } catch let refusal as DeviceRecordRefusal {
            switch refusal.reason {
            case .notYours: throw APIError(.forbidden, "not_yours", refusal.message)
            case .stale: throw APIError(.conflict, "stale_log", refusal.message)
            case .invalid: throw APIError(.unprocessableContent, "record_refused", refusal.message)
            }
        } catch let error as StoreError where error.code == .invalidRecord || error.code == .notOwner {
            throw APIError(.unprocessableContent, "record_refused", error.message)
        }
    }
}
