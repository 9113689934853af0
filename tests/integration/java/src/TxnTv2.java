import java.util.Properties;

import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;

/**
 * A kafka-clients transactional producer against mockbroker: three transactions (commit, abort,
 * commit) of 10 records each over partitions 0 and 1 of the topic.  At transaction.version 2 the
 * client adds partitions through Produce v12 and ends with EndTxn v5 (KIP-890 part 2); below it
 * sends AddPartitionsToTxn.  Prints one line per transaction, then DONE.
 *
 * Usage: TxnTv2 BOOTSTRAP TOPIC TRANSACTIONAL_ID
 */
public class TxnTv2 {
    public static void main(String[] args) throws Exception {
        String bootstrap = args[0], topic = args[1], transactionalId = args[2];
        Properties props = Transactions.producerProps(bootstrap, transactionalId);  // compiled along
        props.put(ProducerConfig.CLIENT_ID_CONFIG, transactionalId);
        String[][] plan = {{"c1", "commit"}, {"a1", "abort"}, {"c2", "commit"}};
        try (KafkaProducer<String, String> producer = new KafkaProducer<>(props)) {
            producer.initTransactions();
            for (String[] step : plan) {
                producer.beginTransaction();
                for (int i = 0; i < 10; i++) {
                    producer.send(new ProducerRecord<>(topic, i % 2, null, step[0] + "-" + i));
                }
                if (step[1].equals("commit")) {
                    producer.commitTransaction();
                } else {
                    producer.flush();
                    producer.abortTransaction();
                }
                System.out.println(step[1].toUpperCase() + " " + step[0]);
            }
        }
        System.out.println("DONE");
    }
}
