import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.lang.reflect.Field;
import java.lang.reflect.Modifier;
import java.lang.reflect.ParameterizedType;
import java.lang.reflect.Type;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HexFormat;
import java.util.List;
import java.util.Random;
import org.apache.kafka.common.Uuid;
import org.apache.kafka.common.errors.RetriableException;
import org.apache.kafka.common.errors.UnsupportedVersionException;
import org.apache.kafka.common.message.ApiMessageType;
import org.apache.kafka.common.protocol.ApiMessage;
import org.apache.kafka.common.protocol.ByteBufferAccessor;
import org.apache.kafka.common.protocol.Errors;
import org.apache.kafka.common.protocol.Message;
import org.apache.kafka.common.protocol.ObjectSerializationCache;
import org.apache.kafka.common.record.internal.BaseRecords;
import org.apache.kafka.common.record.internal.MemoryRecords;

/**
 * Kafka's own serialization of every request and response version of kafka-clients (4.4.0), for the
 * cross-check of mockbroker's codecs (tests/integration/test_kafka_messages_java.py).
 *
 *   java MessageCrossCheck write SEEDS    one JSON line per (api key, version, request|response, seed):
 *                                          {"api", "version", "kind", "seed", "hex", "json"}
 *   java MessageCrossCheck errors          one line per Errors constant: {"code", "name", "retriable", "message"}
 *   java MessageCrossCheck read           reads lines {"api", "version", "kind", "seed", "hex", "python"}
 *                                          and answers one line each: {"api", "version", "kind", "seed",
 *                                          "equal", "error"}
 *
 * write: a message of the generated *Data class (ApiMessageType.newRequest/newResponse) is filled by
 * reflection over its fields, nested structs and collections included, with values drawn from a
 * Random(seed): numbers over their whole range, strings (some not ASCII), bytes, uuids, records, arrays of
 * 0-3 elements, nulls where a field takes them; error codes are Kafka's (Errors), and times in
 * milliseconds ("...Ms" int64 fields) are the field's default (-1 for most) or within 0..2^41, where
 * clients and brokers keep them (kio reads a timestamp into a datetime, and a duration into a
 * timedelta: neither takes any int64, nor a negative timestamp where -1 is not the default).  A field the version does not have ("Attempted to write a
 * non-default X at version V") is put back to its default, and a null the version does not take makes
 * the draw start again without nulls.  The message is written (Message.size/write with an
 * ObjectSerializationCache) and read back, and the message read back is the one printed: its bytes, and
 * its JSON form at that version (the generated *JsonConverter.write).
 * read: both byte strings are read at the version ("new XData(new ByteBufferAccessor(buf), version)"
 * by way of Message.read); equal is the generated equals() of the two, and every byte must be consumed.
 */
public class MessageCrossCheck {
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final HexFormat HEX = HexFormat.of();
    private static final Errors[] ERRORS = Errors.values();
    private static final String[] WORDS = {"", "a", "topic-1", "é", "日本語", "group.id", "x".repeat(40)};

    public static void main(String[] args) throws Exception {
        PrintStream out = new PrintStream(System.out, false, StandardCharsets.UTF_8);
        if (args.length == 2 && args[0].equals("write")) {
            write(Integer.parseInt(args[1]), out);
        } else if (args.length == 1 && args[0].equals("read")) {
            read(out);
        } else if (args.length == 1 && args[0].equals("errors")) {
            for (Errors e : ERRORS) {
                ObjectNode line = JSON.createObjectNode();
                line.put("code", e.code());
                line.put("name", e.name());
                line.put("retriable", e.exception() instanceof RetriableException);
                // the exception's own message (what ApiError(error) carries); NONE has no exception, and
                // Errors.message() falls back to its name there, which no response carries
                line.put("message", e.exception() == null ? null : e.message());
                out.println(JSON.writeValueAsString(line));
            }
        } else {
            System.err.println("usage: MessageCrossCheck write SEEDS | read | errors");
            System.exit(2);
        }
        out.flush();
    }

    static ApiMessage newMessage(ApiMessageType type, String kind) {
        return kind.equals("request") ? type.newRequest() : type.newResponse();
    }

    static void write(int seeds, PrintStream out) throws Exception {
        for (ApiMessageType type : ApiMessageType.values()) {
            for (short v = type.lowestSupportedVersion(); v <= type.highestSupportedVersion(true); v++) {
                for (String kind : new String[] {"request", "response"}) {
                    for (int seed = 0; seed < seeds; seed++) {
                        ApiMessage read = filled(type, kind, v, seed);
                        ByteBuffer bytes = serialize(read, v);
                        ObjectNode line = JSON.createObjectNode();
                        line.put("api", type.apiKey());
                        line.put("version", v);
                        line.put("kind", kind);
                        line.put("seed", seed);
                        line.put("hex", HEX.formatHex(bytes.array()));
                        line.set("json", toJson(read, v));
                        out.println(JSON.writeValueAsString(line));
                    }
                }
            }
        }
    }

    /** A message of ``type`` filled from Random(seed) that ``version`` can carry, as read back from its bytes. */
    static ApiMessage filled(ApiMessageType type, String kind, short version, int seed) throws Exception {
        for (boolean nulls : new boolean[] {true, false}) {
            ApiMessage message = newMessage(type, kind);
            fill(message, new Random(seed * 31L + version), nulls, 0);
            for (int attempt = 0; attempt < 200; attempt++) {
                try {
                    ByteBuffer bytes = serialize(message, version);
                    ApiMessage back = newMessage(type, kind);
                    back.read(new ByteBufferAccessor(bytes), version);
                    return back;
                } catch (UnsupportedVersionException e) {
                    String msg = String.valueOf(e.getMessage());
                    String prefix = "Attempted to write a non-default ";
                    int at = msg.indexOf(prefix);
                    if (at < 0) {
                        throw e;
                    }
                    String field = msg.substring(at + prefix.length()).split(" ")[0];
                    if (!resetField(message, field)) {
                        throw new IllegalStateException("no field " + field + " to reset in " + type + " v" + version, e);
                    }
                } catch (NullPointerException e) {
                    break; // a null this version does not take: draw again without nulls
                }
            }
        }
        throw new IllegalStateException("could not fill " + type + " " + kind + " v" + version);
    }

    static ByteBuffer serialize(Message message, short version) {
        ObjectSerializationCache cache = new ObjectSerializationCache();
        ByteBuffer buf = ByteBuffer.allocate(message.size(cache, version));
        message.write(new ByteBufferAccessor(buf), cache, version);
        buf.flip();
        return buf;
    }

    static JsonNode toJson(ApiMessage message, short version) throws Exception {
        Class<?> converter = Class.forName(message.getClass().getName() + "JsonConverter");
        return (JsonNode) converter.getMethod("write", message.getClass(), short.class, boolean.class)
            .invoke(null, message, version, true);
    }

    static List<Field> dataFields(Class<?> cls) {
        List<Field> out = new ArrayList<>();
        for (Field f : cls.getDeclaredFields()) {
            int mod = f.getModifiers();
            if (Modifier.isStatic(mod) || f.isSynthetic() || f.getName().startsWith("_")) {
                continue;
            }
            if ((f.getName().equals("next") || f.getName().equals("prev")) && f.getType() == int.class) {
                continue; // ImplicitLinkedHashCollection.Element's links, not message fields
            }
            f.setAccessible(true);
            out.add(f);
        }
        return out;
    }

    static void fill(Object message, Random r, boolean nulls, int depth) throws Exception {
        for (Field f : dataFields(message.getClass())) {
            f.set(message, value(f.getName(), f.getType(), f.getGenericType(), r, nulls, depth, f.get(message)));
        }
    }

    /** Put every field named ``name`` in the message tree back to its default; whether there was one. */
    static boolean resetField(Object message, String name) throws Exception {
        boolean found = false;
        Object fresh = message.getClass().getDeclaredConstructor().newInstance();
        for (Field f : dataFields(message.getClass())) {
            Object value = f.get(message);
            if (f.getName().equals(name)) {
                f.set(message, f.get(fresh));
                found = true;
            } else if (value instanceof Message) {
                found |= resetField(value, name);
            } else if (value instanceof Collection<?> items) {
                for (Object item : items) {
                    if (item instanceof Message) {
                        found |= resetField(item, name);
                    }
                }
            }
        }
        return found;
    }

    @SuppressWarnings({"unchecked", "rawtypes"})
    /** A value for field ``name`` (its default in a new message: ``fresh``). */
    static Object value(String name, Class<?> type, Type generic, Random r, boolean nulls, int depth, Object fresh)
            throws Exception {
        boolean reference = !type.isPrimitive();
        if (reference && nulls && r.nextInt(6) == 0) {
            return null;
        }
        if (type == short.class && name.toLowerCase().endsWith("errorcode")) {
            return ERRORS[r.nextInt(ERRORS.length)].code();
        }
        if (type == long.class && name.endsWith("Ms")) {
            return r.nextInt(4) == 0 ? fresh : r.nextLong(1L << 41);
        }
        if (type == byte.class) return (byte) r.nextInt();
        if (type == short.class) return (short) r.nextInt();
        if (type == int.class) return r.nextInt(4) == 0 ? -1 : r.nextInt();
        if (type == long.class) return r.nextInt(4) == 0 ? -1L : r.nextLong();
        if (type == double.class) return r.nextDouble() * 1e6 - 5e5;
        if (type == boolean.class) return r.nextBoolean();
        if (type == String.class) return WORDS[r.nextInt(WORDS.length)];
        if (type == byte[].class) return bytes(r);
        if (type == ByteBuffer.class) return ByteBuffer.wrap(bytes(r));
        if (type == Uuid.class) return r.nextInt(5) == 0 ? Uuid.ZERO_UUID : new Uuid(r.nextLong(), r.nextLong());
        if (BaseRecords.class.isAssignableFrom(type)) return MemoryRecords.readableRecords(ByteBuffer.wrap(bytes(r)));
        if (type == Integer.class) return r.nextInt();
        if (type == Long.class) return r.nextLong();
        if (type == Short.class) return (short) r.nextInt();
        if (type == Byte.class) return (byte) r.nextInt();
        if (type == List.class) {
            Type element = ((ParameterizedType) generic).getActualTypeArguments()[0];
            List<Object> list = new ArrayList<>();
            int n = depth > 2 ? 0 : r.nextInt(4);
            for (int i = 0; i < n; i++) {
                list.add(value(name, (Class<?>) element, element, r, false, depth + 1, null));
            }
            return list;
        }
        if (Collection.class.isAssignableFrom(type)) { // a generated XxxCollection (ImplicitLinkedHashMultiCollection)
            Collection items = (Collection) type.getDeclaredConstructor().newInstance();
            Type element = ((ParameterizedType) type.getGenericSuperclass()).getActualTypeArguments()[0];
            int n = depth > 2 ? 0 : r.nextInt(4);
            for (int i = 0; i < n; i++) {
                items.add(value(name, (Class<?>) element, element, r, false, depth + 1, null));
            }
            return items;
        }
        if (Message.class.isAssignableFrom(type)) {
            Object nested = type.getDeclaredConstructor().newInstance();
            fill(nested, r, nulls, depth + 1);
            return nested;
        }
        throw new IllegalArgumentException("no value for " + type + " (" + generic + ")");
    }

    static byte[] bytes(Random r) {
        byte[] b = new byte[r.nextInt(12)];
        r.nextBytes(b);
        return b;
    }

    static void read(PrintStream out) throws Exception {
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        String raw;
        while ((raw = in.readLine()) != null) {
            if (raw.isBlank()) {
                continue;
            }
            JsonNode line = JSON.readTree(raw);
            ApiMessageType type = ApiMessageType.fromApiKey((short) line.get("api").asInt());
            short version = (short) line.get("version").asInt();
            String kind = line.get("kind").asText();
            ObjectNode answer = JSON.createObjectNode();
            answer.put("api", type.apiKey());
            answer.put("version", version);
            answer.put("kind", kind);
            answer.put("seed", line.get("seed").asInt());
            try {
                ApiMessage java = parse(type, kind, version, line.get("hex").asText());
                ApiMessage python = parse(type, kind, version, line.get("python").asText());
                answer.put("equal", java.equals(python));
                answer.putNull("error");
            } catch (RuntimeException e) {
                answer.put("equal", false);
                answer.put("error", e.toString());
            }
            out.println(JSON.writeValueAsString(answer));
        }
    }

    static ApiMessage parse(ApiMessageType type, String kind, short version, String hex) {
        ByteBuffer buf = ByteBuffer.wrap(HEX.parseHex(hex));
        ApiMessage message = newMessage(type, kind);
        message.read(new ByteBufferAccessor(buf), version);
        if (buf.hasRemaining()) {
            throw new IllegalStateException(buf.remaining() + " bytes left after reading");
        }
        return message;
    }
}
