package policy

// predictionBlind is a Policy that reads no prediction: neither
// Snapshot.Predicted nor what is made of it (the committed service of
// running jobs an Engine keeps for indexed policies). Its ranking is the
// same whatever a Predictor says, or whether there is one.
type predictionBlind interface {
	Policy
	predictionBlind()
}

// ReadsPredictions reports whether p's ranking may depend on run-time
// predictions: false only for the policies that declare they read none
// (Traits.PredictionBlind). A caller that shows nobody the predictions
// (the simulator without a recorder or a forecast) need not compute them
// for a policy that does not read them.
func ReadsPredictions(p Policy) bool {
	_, blind := p.(predictionBlind)
	return !blind
}

func (*fifo) predictionBlind()      {}
func (*sjfLimit) predictionBlind()  {}
func (*f1) predictionBlind()        {}
func (*wfp3) predictionBlind()      {}
func (*unicep) predictionBlind()    {}
func (*sjfOracle) predictionBlind() {}

// fairshare and Slurm's multifactor rank by usage the Ledger charged for
// what ran, age, size, partition and QOS: never by a prediction.
func (*fairshare) predictionBlind()   {}
func (*multifactor) predictionBlind() {}

// tiresias ranks by the service the Ledger charged each job (and, with
// Gittins, the service of finished jobs): a prediction changes nothing.
func (*tiresias) predictionBlind() {}
