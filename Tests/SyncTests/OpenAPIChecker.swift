import Foundation
import NIOConcurrencyHelpers

/// Checks responses of the running node against its own OpenAPI document: the route and method exist, the status
/// is one the document lists, and a JSON body matches the listed schema (the subset of JSON Schema we use: type,
/// properties, required, additionalProperties, items, enum, pattern, minimum, maximum, minItems, oneOf, $ref,
/// date-time). It also remembers which operations were seen, so a test can require every one.
final class OpenAPIChecker: Sendable {
    // The document is parsed once and never changed; `Any` values from JSONSerialization are immutable here.
    nonisolated(unsafe) let document: [String: Any]
    private let seen = NIOLockedValueBox<Set<String>>([])

    init(json: Data) throws {
        guard let document = try JSONSerialization.jsonObject(with: json) as? [String: Any] else {
            throw HTTPTestClient.Failure(description: "the OpenAPI document is not a JSON object")
        }
        self.document = document
    }

    var paths: [String: [String: Any]] { document["paths"] as? [String: [String: Any]] ?? [:] }

    /// Every operation of the document, as `METHOD template`.
    var operations: Set<String> {
        var all = Set<String>()
        for (template, item) in paths {
            for method in ["get", "put", "post", "patch", "delete"] where item[method] != nil {
                all.insert("\(method.uppercased()) \(template)")
            }
        }
        return all
    }

    var unseen: Set<String> { operations.subtracting(seen.withLockedValue { $0 }) }

    /// The operations tagged `tag` (`groups`: the group routes, which GroupAPITests exercises).
    func operations(tagged tag: String) -> Set<String> {
        var tagged = Set<String>()
        for (template, item) in paths {
            for method in ["get", "put", "post", "patch", "delete"] {
                guard let operation = item[method] as? [String: Any],
                    (operation["tags"] as? [String])?.contains(tag) == true
                else { continue }
                tagged.insert("\(method.uppercased()) \(template)")
            }
        }
        return tagged
    }

    /// The document's path template for a concrete path (query removed), such as `/api/posts/{id}`.
    func template(for path: String) -> String? {
        let concrete = path.split(separator: "?")[0].split(separator: "/", omittingEmptySubsequences: false)
        return paths.keys.sorted().first { template in
            let parts = template.split(separator: "/", omittingEmptySubsequences: false)
            guard parts.count == concrete.count else { return false }
            return zip(parts, concrete).allSatisfy { pattern, segment in
                pattern.hasPrefix("{") ? !segment.isEmpty : pattern == segment
            }
        }
    }

    /// Problems with this response (empty: it conforms).
    func problems(_ method: String, _ path: String, _ response: HTTPTestResponse) -> [String] {
        guard let template = template(for: path) else { return ["\(path): no such path in the OpenAPI document"] }
        guard let operation = paths[template]?[method.lowercased()] as? [String: Any] else {
            return ["\(method) \(template): no such operation in the OpenAPI document"]
        }
        seen.withLockedValue { _ = $0.insert("\(method) \(template)") }
        let responses = operation["responses"] as? [String: Any] ?? [:]
        guard let listed = responses["\(response.status)"] as? [String: Any] else {
            return ["\(method) \(path): status \(response.status) is not in the document (\(responses.keys.sorted()))"]
        }
        let content = listed["content"] as? [String: Any] ?? [:]
        let type = response.headers["content-type"] ?? ""
        if type.hasPrefix("application/json"), let json = content["application/json"] as? [String: Any] {
            guard let body = try? JSONSerialization.jsonObject(with: response.body, options: .fragmentsAllowed) else {
                return ["\(method) \(path): the body is not JSON"]
            }
            return validate(body, json["schema"] as? [String: Any] ?? [:], at: "\(method) \(path) $")
        }
        if !content.isEmpty, response.status != 304 {
            let accepted = content.keys.contains { key in
                key == "*/*" || type.hasPrefix(key.replacingOccurrences(of: "*", with: ""))
            }
            if !accepted { return ["\(method) \(path): content type '\(type)' is not one of \(content.keys.sorted())"] }
        }
        return []
    }

    func resolve(_ schema: [String: Any]) -> [String: Any] {
        guard let ref = schema["$ref"] as? String else { return schema }
        var node: Any = document
        for part in ref.dropFirst(2).split(separator: "/") { node = (node as? [String: Any])?[String(part)] ?? [:] }
        return node as? [String: Any] ?? [:]
    }

    static func isBool(_ value: Any) -> Bool { String(describing: type(of: value)) == "__NSCFBoolean" }

    func matchesType(_ value: Any, _ type: String) -> Bool {
        switch type {
        case "null": value is NSNull
        case "boolean": Self.isBool(value)
        case "integer": !Self.isBool(value) && value is Int
        case "number": !Self.isBool(value) && (value is Double || value is Int)
        case "string": value is String
        case "array": value is [Any]
        case "object": value is [String: Any]
        default: false
        }
    }

    func validate(_ value: Any, _ raw: [String: Any], at path: String) -> [String] {
        let schema = resolve(raw)
        if let options = schema["oneOf"] as? [[String: Any]] {
            let matching = options.filter { validate(value, $0, at: path).isEmpty }.count
            return matching == 1 ? [] : ["\(path): matches \(matching) of the oneOf schemas, not exactly 1"]
        }
        var problems: [String] = []
        if let type = schema["type"] {
            let types = (type as? [String]) ?? [type as? String ?? ""]
            guard types.contains(where: { matchesType(value, $0) }) else {
                return ["\(path): \(value) is not of type \(types)"]
            }
        }
        if let options = schema["enum"] as? [String], let text = value as? String, !options.contains(text) {
            problems.append("\(path): '\(text)' is not one of \(options)")
        }
        if let text = value as? String {
            if let pattern = schema["pattern"] as? String, text.range(of: pattern, options: .regularExpression) == nil {
                problems.append("\(path): '\(text)' does not match \(pattern)")
            }
            if schema["format"] as? String == "date-time" {
                let formatter = ISO8601DateFormatter()
                formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
                if formatter.date(from: text) == nil { problems.append("\(path): '\(text)' is not an RFC 3339 time") }
            }
        }
        if !Self.isBool(value), let number = value as? Double {
            if let minimum = schema["minimum"] as? Double, number < minimum {
                problems.append("\(path): \(number) < \(minimum)")
            }
            if let maximum = schema["maximum"] as? Double, number > maximum {
                problems.append("\(path): \(number) > \(maximum)")
            }
        }
        if let array = value as? [Any] {
            if let minimum = schema["minItems"] as? Int, array.count < minimum {
                problems.append("\(path): \(array.count) items, fewer than \(minimum)")
            }
            if let items = schema["items"] as? [String: Any] {
                for (index, item) in array.enumerated() { problems += validate(item, items, at: "\(path)[\(index)]") }
            }
        }
        if let object = value as? [String: Any] {
            let properties = schema["properties"] as? [String: [String: Any]] ?? [:]
            for name in schema["required"] as? [String] ?? [] where object[name] == nil {
                problems.append("\(path): required field '\(name)' is missing")
            }
            for (name, field) in object {
                if let property = properties[name] {
                    problems += validate(field, property, at: "\(path).\(name)")
                } else if schema["additionalProperties"] as? Bool == false {
                    problems.append("\(path): field '\(name)' is not in the schema")
                }
            }
        }
        return problems
    }
}
