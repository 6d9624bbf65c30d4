import Foundation

// Values people type, parsed the same way by the command line and the HTTP API.

extension Coordinate {
    /// `LAT,LON` in decimal degrees (`48.8566,2.3522`), or nil when it is not that or out of range.
    public init?(parsing text: String) {
        let parts = text.split(separator: ",", omittingEmptySubsequences: false)
            .map { $0.trimmingCharacters(in: .whitespaces) }
        guard parts.count == 2, let lat = Double(parts[0]), let lon = Double(parts[1]) else { return nil }
        self.init(latitude: lat, longitude: lon)
    }
}

extension Timestamp {
    /// An RFC 3339 time (`2024-07-14T16:20:00Z`, fractional seconds and offsets allowed), or nil.
    public init?(rfc3339 text: String) {
        let formatter = ISO8601DateFormatter()
        if let date = formatter.date(from: text) {
            self.init(date)
            return
        }
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        guard let date = formatter.date(from: text) else { return nil }
        self.init(date)
    }

    /// A time for a `since` filter: a duration back from `now` (`30m`, `12h`, `5d`, `2w`), a date
    /// (`2024-07-14`, midnight UTC), or an RFC 3339 time; nil when it is none of these.
    public init?(since text: String, now: Date = Date()) {
        let units: [Character: Double] = ["m": 60, "h": 3600, "d": 86_400, "w": 604_800]
        if let unit = text.last, let seconds = units[unit], let count = Double(text.dropLast()), count >= 0,
            count * seconds <= 400 * 365 * 86_400
        {
            self.init(now.addingTimeInterval(-count * seconds))
            return
        }
        let dateOnly = DateFormatter()
        dateOnly.locale = Locale(identifier: "en_US_POSIX")
        dateOnly.timeZone = TimeZone(identifier: "UTC")
        dateOnly.dateFormat = "yyyy-MM-dd"
        if let date = dateOnly.date(from: text) {
            self.init(date)
            return
        }
        self.init(rfc3339: text)
    }
}
