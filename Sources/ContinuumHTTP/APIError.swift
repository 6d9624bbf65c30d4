import ContinuumNode
import ContinuumStore
import Foundation
import Hummingbird
import NIOCore

/// An error the API answers with: a status and a JSON body a person can act on,
/// `{"error": "<code>", "message": "...", "field": "<name>"}` (Docs/API.md lists the codes).
public struct APIError: Error, HTTPResponseError, Sendable, CustomStringConvertible {
    public let status: HTTPResponse.Status
    public let code: String
    public let message: String
    public let field: String?
    /// Extra headers, such as `Content-Range` on a 416.
    var headers: HTTPFields = [:]

    public init(_ status: HTTPResponse.Status, _ code: String, _ message: String, field: String? = nil) {
        self.status = status
        self.code = code
        self.message = message
        self.field = field
    }

    public var description: String { "\(status.code) \(code): \(message)" }

    public func response(from request: Request, context: some RequestContext) throws -> Response {
        var object = ["error": code, "message": message]
        if let field { object["field"] = field }
        var headers = self.headers
        headers[.contentType] = "application/json; charset=utf-8"
        headers[.cacheControl] = "no-store"
        let body = try JSONEncoder.frontEnd().encode(object)
        return Response(status: status, headers: headers, body: .init(byteBuffer: ByteBuffer(bytes: body)))
    }

    static func badRequest(_ message: String, field: String? = nil) -> APIError {
        APIError(.badRequest, "bad_request", message, field: field)
    }

    /// The API's answer to a store error: the store's message, with a status and code for its kind.
    /// `noun` says what a missing id names: "post" gives `unknown_post`.
    static func from(_ error: StoreError, noun: String = "record", field: String? = nil) -> APIError {
        switch error.code {
        case .notFound: APIError(.notFound, "unknown_\(noun)", error.message, field: field)
        case .ambiguous: APIError(.conflict, "ambiguous_prefix", error.message, field: field)
        case .notOwner: APIError(.forbidden, "not_owner", error.message, field: field)
        case .invalidInput, .invalidRecord: APIError(.badRequest, "bad_request", error.message, field: field)
        default: APIError(.internalServerError, "internal", error.message)
        }
    }
}
